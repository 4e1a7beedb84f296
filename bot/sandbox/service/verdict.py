"""How a run ended, decided by the parent from what the child cannot forge.

The status comes from the wall clock, the output counters, the cgroup's OOM events and the
exit status with its CPU time. The child's report (which learner code can overwrite) only
adds detail: the learner's error line, a check's observations. It can say *why* a failure
happened (out of memory, not valid Python) but never turn one into `ok`; a report that is
malformed, oversized or written twice makes the run an `error` with a plain reason.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from bot.sandbox.protocol import (
    ERROR,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    MEMORY,
    OK,
    OUTPUT_LIMIT,
    REFUSED,
    TIMEOUT,
    Limits,
    unframe,
)

DETAIL_TEXT_MAX = 4000


@dataclass(frozen=True)
class Ending:
    """What the parent saw of one child."""

    wait_status: int
    cpu_s: float  # user + system time of the child and what it waited for
    timed_out: bool = False
    output_overflow: bool = False
    report_overflow: bool = False
    oom_killed: bool = False
    report: bytes = b""


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decide(ending: Ending, limits: Limits) -> tuple[dict, dict]:
    """(result fields for the client, the child's parsed detail or {})."""
    if ending.timed_out:
        return {"status": TIMEOUT, "exit_code": None,
                "error": f"stopped after {limits.wall_s:g} s"}, {}
    if ending.output_overflow:
        return {"status": OUTPUT_LIMIT, "exit_code": None,
                "error": f"stopped: printed more than {limits.output_max_bytes // 1024} KB"}, {}
    if ending.report_overflow:
        return {"status": ERROR, "exit_code": None,
                "error": f"stopped: wrote more than {limits.report_max_bytes // 1024} KB to "
                         f"the sandbox's report channel"}, {}
    if ending.oom_killed:
        return {"status": MEMORY, "exit_code": None,
                "error": "stopped: used more memory than allowed"}, {}
    if os.WIFSIGNALED(ending.wait_status):
        number = os.WTERMSIG(ending.wait_status)
        if number == signal.SIGXCPU or (number == signal.SIGKILL
                                        and ending.cpu_s >= limits.cpu_s - 0.05):
            return {"status": TIMEOUT, "exit_code": None,
                    "error": f"stopped after {limits.cpu_s} s of CPU time"}, {}
        return {"status": ERROR, "exit_code": -number,
                "error": f"the program ended abruptly ({signal_name(number)})"}, {}
    code = os.WEXITSTATUS(ending.wait_status)
    detail = {}
    if ending.report:
        try:
            detail = unframe(ending.report)
        except ValueError as exc:
            return {"status": ERROR, "exit_code": code,
                    "error": f"the program wrote into the sandbox's report channel ({exc})"}, {}
    fields = {"exit_code": code, **_shown(detail)}
    if code == EXIT_OK:
        return {**fields, "status": OK}, detail
    if code == EXIT_ERROR and detail.get("out_of_memory") is True:
        return {**fields, "status": MEMORY}, detail
    if code == EXIT_REFUSED and detail.get("refused") is True:
        return {**fields, "status": REFUSED, "exit_code": None}, detail
    fields.setdefault("error", f"the program ended abruptly (exit {code})"
                      if code != EXIT_ERROR else "the program failed")
    return {**fields, "status": ERROR}, detail


def _shown(detail: dict) -> dict:
    """The parts of the child's detail a client may see, type-checked and bounded."""
    shown = {}
    for key in ("error", "note"):
        if isinstance(detail.get(key), str):
            shown[key] = detail[key][:DETAIL_TEXT_MAX]
    if isinstance(detail.get("line"), int) and not isinstance(detail["line"], bool):
        shown["line"] = detail["line"]
    if detail.get("device") in ("cpu", "cuda"):
        shown["device"] = detail["device"]
    return shown
