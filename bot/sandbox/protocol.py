"""What crosses between the bot, the sandbox service and its jailed children.

Bot <-> service: JSON lines. A submission is {"id", "code", "mode": "run"|"check",
"checker", "device", "learner"} (`learner`: an opaque key, the same from every bot process,
so the service admits one run per learner); a result is {"id", "status", "exit_code",
"stdout", "stderr", "elapsed_ms", ...}. Statuses are the product's: ok, error, timeout,
memory, output_limit, refused. A result with "busy": true was not run (the learner has a run
in flight, or the service is full); its stderr says so. A result with "unjudged" (a cause,
`UNJUDGED`) says nothing about the code: our part failed (no host, a crash of ours, no
answer in time), so the engine grades nothing and the learner sends it again.

The service builds and writes results as dicts; a client reads each reply as a `RunResult`
(`RunResult.from_wire`), so callers read attributes and never guess at keys.

Service -> child: one length-prefixed JSON request. Child -> service: its exit status, and
at most one length-prefixed JSON report of detail (see `frame`/`unframe`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

OK, ERROR, TIMEOUT, MEMORY, OUTPUT_LIMIT, REFUSED = (
    "ok", "error", "timeout", "memory", "output_limit", "refused")
STATUSES = (OK, ERROR, TIMEOUT, MEMORY, OUTPUT_LIMIT, REFUSED)
LEARNER_FILE = "<your code>"
# How a child ends. Any other exit status is the learner's own (sys.exit(n), os._exit(n)).
EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2


@dataclass(frozen=True)
class Limits:
    """Per-submission limits. Memory is a cgroup limit where cgroups exist, and an
    RLIMIT_DATA allowance above the forked image everywhere."""

    wall_s: float = 10.0
    cpu_s: int = 12  # above wall_s: a busy loop meets the wall-clock limit first
    memory_mb: int = 768
    data_mb: int = 384
    pids: int = 32
    file_mb: int = 8
    open_files: int = 64
    tmpfs_mb: int = 16
    output_keep_bytes: int = 16_384
    output_max_bytes: int = 1_048_576
    report_max_bytes: int = 4_194_304  # a check's observations: a few KB when honest
    code_max_bytes: int = 65_536
    gpu_memory_fraction: float = 0.25
    # The service answers every request within wall_s plus this, whatever happens.
    reply_margin_s: float = 20.0


def encode(message: dict) -> bytes:
    """One JSON line of valid UTF-8: a lone surrogate (from learner text) becomes '?'."""
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "replace") + b"\n"


def decode(line: bytes) -> dict:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message


def frame(message: dict) -> bytes:
    body = json.dumps(message, separators=(",", ":"), default=str).encode()
    return len(body).to_bytes(4, "big") + body


def unframe(data: bytes) -> dict:
    """Exactly one framed JSON object; ValueError says plainly what else it was."""
    if len(data) < 4:
        raise ValueError("the report was cut off")
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 + size:
        raise ValueError("the report was cut off")
    if len(data) > 4 + size:
        raise ValueError("more than one report was written")
    try:
        message = read_json(data[4:])
    except ValueError as exc:
        raise ValueError(f"the report {exc}") from None
    if not isinstance(message, dict):
        raise ValueError("the report was not a JSON object")
    return message


FLOAT_DIGITS = len(str(int(sys.float_info.max)))  # 309: no int in a float's range is longer
DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def _int(text: str) -> int:
    if len(text.lstrip("-")) <= FLOAT_DIGITS and abs(value := int(text)) <= sys.float_info.max:
        return value
    raise ValueError("held a number outside a float's range")


def read_json(data: bytes):
    """JSON written where learner code ran (a child's report, a record to judge): every int
    within a float's range, since the judge computes in floats (a 400-digit int stopped a
    checker process). A float literal past the range reads as inf, as an overflow reads
    (json.dumps writes NaN and Infinity). ValueError completes "the report ..."."""
    # Each int read in Python made a report of ints 2 to 4 times slower to read: only a
    # report with FLOAT_DIGITS digits in a row somewhere (a string's, maybe) pays for it.
    long = b"0" * FLOAT_DIGITS in data.translate(DIGITS_AS_ZEROS)
    try:
        return json.loads(data, parse_int=_int if long else None)
    except RecursionError:
        raise ValueError("was nested too deeply to read") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError("was not valid JSON") from None


def refused(reason: str) -> dict:
    return {"status": REFUSED, "exit_code": None, "stdout": "", "stderr": reason,
            "elapsed_ms": 0.0}


# Why a run was not judged when the fault is ours, never the code's (a result's "unjudged"):
# the operator's metric `tutor_sandbox_unjudged_total{cause}` counts each.
UNJUDGED = {
    "crash": "the code runner crashed while running it",
    "timeout": "the code runner did not answer in time",
    "lost": "the code runner lost it",
    "busy": "the code runner is busy right now",
    "checker": "the checker failed while judging it",
    "exercise": "this exercise's own code failed",
    "unreadable": "the code runner's reply could not be read",
    "shutdown": "the bot was shutting down",
    "no_host": "no code runner is up right now",
    "unreachable": "the code runner cannot be reached right now",
}


def failed(reason: str, cause: str) -> dict:
    """Not judged, and not the code's fault: the sandbox could not run it, or not in time.
    `cause`: one of UNJUDGED, for the operator."""
    assert cause in UNJUDGED, cause
    return {**refused(reason), "status": ERROR, "unjudged": cause}


def busy(reason: str) -> dict:
    """Not run, and not the code's fault: the client tells the learner to wait."""
    return {**failed(reason, "busy"), "busy": True}


class Malformed(ValueError):
    """A reply that does not have a result's shape; the message says which field."""


def _text(message: dict, key: str, default: str | None = None) -> str | None:
    value = message.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise Malformed(f"{key} is not text")
    return value


def _number(message: dict, key: str, kind: type, default: Any = None) -> Any:
    value = message.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, kind):
        raise Malformed(f"{key} is not a number")
    return value


def _texts(message: dict, key: str) -> tuple[str, ...]:
    value = message.get(key, ())
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise Malformed(f"{key} is not a list of text")
    return tuple(value)


@dataclass(frozen=True)
class RaisedError:
    """The exception the learner's code raised, as the checker saw it (the learner's text)."""

    type: str
    message: str
    line: int | None = None


@dataclass(frozen=True)
class CheckReport:
    """The checker's verdict on a code check that ran to the end."""

    status: str = OK
    passed: bool = False
    mistakes: tuple[str, ...] = ()
    feedback: tuple[str, ...] = ()  # the checker's and the service's lines, learner text quoted
    error: RaisedError | None = None
    # Whether a backward() or an optimizer step ran before the code stopped; only an
    # explicit false (the checker process's) says it did not.
    trained: bool = True

    @classmethod
    def from_wire(cls, report: object) -> CheckReport:
        if not isinstance(report, dict):
            raise Malformed("the report is not an object")
        error = report.get("error")
        if isinstance(error, dict):
            error = RaisedError(str(error.get("type")), str(error.get("message")),
                                _number(error, "line", int))
        elif error is not None:
            raise Malformed("the report's error is not an object")
        return cls(_text(report, "status", OK), bool(report.get("passed")),
                   _texts(report, "mistakes"), _texts(report, "feedback"), error,
                   report.get("trained") is not False)


@dataclass(frozen=True)
class RunResult:
    """One submission's result, as a client reads it. `report`: only when a check ran to
    the end; `busy`: the service did not run it (its `stderr` says why)."""

    status: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    elapsed_ms: float = 0.0
    error: str | None = None  # text the learner's code can write: quote it
    line: int | None = None  # the learner's line that raised
    note: str | None = None  # e.g. why a cuda run ran on the CPU
    device: str | None = None  # where the code ran
    busy: bool = False
    report: CheckReport | None = None
    # Not judged, through no fault of the code: the cause (a key of UNJUDGED), else None.
    unjudged: str | None = None

    @classmethod
    def from_wire(cls, message: dict) -> RunResult:
        """Never raises: a reply of the wrong shape (an older or a hostile service) becomes
        an error result that says so."""
        try:
            status = message.get("status")
            if status not in STATUSES:
                raise Malformed(f"unknown status {str(status)[:40]!r}")
            report = message.get("report")
            unjudged = _text(message, "unjudged")
            if unjudged is not None and unjudged not in UNJUDGED:
                raise Malformed(f"unknown cause {unjudged[:40]!r}")
            return cls(status, _number(message, "exit_code", int),
                       _text(message, "stdout", ""), _text(message, "stderr", ""),
                       float(_number(message, "elapsed_ms", int | float, 0.0)),
                       _text(message, "error"), _number(message, "line", int),
                       _text(message, "note"), _text(message, "device"),
                       message.get("busy") is True,
                       None if report is None else CheckReport.from_wire(report), unjudged)
        except Malformed as exc:
            return cls(ERROR, error=f"the sandbox sent a result this bot cannot read ({exc})",
                       unjudged="unreadable")


@dataclass(frozen=True)
class ServiceInfo:
    """What the service says of itself when a client connects (its reply to `info`)."""

    runs_code: bool = True  # False: no memory limit here, and the operator did not accept that
    memory_limited: bool | None = None
    gpu: bool = False
    cgroups: str | None = None  # "v1" or "v2": the hierarchy that limits each child
    limits: dict = field(default_factory=dict)  # what those cgroups enforce
    slots: int | None = None  # jailed children at once
    pid: int | None = None
    zygote_pid: int | None = None

    @classmethod
    def from_wire(cls, message: dict) -> ServiceInfo:
        """Fields an older service does not send keep their defaults; one of the wrong
        type is a Malformed error (the client cannot trust that service)."""
        def flag(key: str, default: bool | None) -> bool | None:
            value = message.get(key, default)
            if value is not None and not isinstance(value, bool):
                raise Malformed(f"{key} is not true or false")
            return value

        limits = {} if message.get("limits") is None else message["limits"]
        if not isinstance(limits, dict):
            raise Malformed("limits is not an object")
        return cls(bool(flag("runs_code", True)), flag("memory_limited", None),
                   bool(flag("gpu", False)), _text(message, "cgroups"), limits,
                   _number(message, "slots", int), _number(message, "pid", int),
                   _number(message, "zygote_pid", int))
