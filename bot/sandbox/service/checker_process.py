"""A process that judges code checks for the sandbox service, one request at a time.

The judges (`content.checkers`) are pure Python and bound their own work, but their input
comes from a process that ran learner code. Whatever a crafted record makes a judge do, it
must cost only that record's verdict: so judging runs here, under an address-space limit,
and the service (`checker_pool`) kills and replaces a process that misses its deadline.

On stdin and stdout, 4-byte big-endian length-prefixed JSON:
in {"checker", "salt", "observations"}; out {"report": {...}} or {"malformed": reason}.
Whatever a judge raises on a record makes that record malformed, with what was wrong with
it: an OverflowError from a forged number once ended the process, and every verdict waiting
on it. A MemoryError alone is answered {"failed": "memory"}, and the process then exits: its
heap may be in any state.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import traceback

from bot.sandbox.protocol import read_json
from content import checkers
from content.checkers._events import Malformed

MIB = 1 << 20


def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def _write(stream, message: dict) -> None:
    body = json.dumps(message, separators=(",", ":")).encode()
    stream.write(len(body).to_bytes(4, "big") + body)
    stream.flush()


def answer(request: dict) -> dict:
    """One verdict, or why the record could not be judged."""
    if not isinstance(request, dict):
        return {"malformed": "the request was not a JSON object"}
    name, salt = request.get("checker"), request.get("salt")
    if name not in checkers.NAMES or isinstance(salt, bool) or not isinstance(salt, int):
        return {"malformed": "the request named no checker"}
    observations = request.get("observations")
    try:
        judge = checkers.load(name)
        report = judge.judge(observations, salt)
        # Whether the code got as far as its check judges (for a train loop: whether it
        # trained) before it stopped: one that did not may be sent again free.
        return {"report": {**report, "trained": judge.progressed(observations)}}
    except MemoryError:
        raise  # the process's own state, not the record's: `serve` ends the process
    except Exception as exc:  # noqa: BLE001 - any of them costs this record only
        return {"malformed": _why(name, exc)}


def _why(checker: str, exc: Exception) -> str:
    """What was wrong with the record, in words; the unforeseen also in the service's log."""
    if isinstance(exc, Malformed):
        return str(exc)[:300] or "its shape is not the observer's"
    if isinstance(exc, RecursionError):
        return "it is nested too deeply to read"
    kind = type(exc).__name__
    where = traceback.extract_tb(exc.__traceback__)[-1]
    print(f"checker {checker}: a record raised {kind}: {str(exc)[:200]} at "
          f"{where.filename}:{where.lineno}", file=sys.stderr, flush=True)  # for the operator
    if isinstance(exc, ArithmeticError):  # OverflowError: a forged -1e308, squared; a 0 divisor
        return f"a number in it is beyond what the checker can compute with: {kind}"
    return f"a value in it is not of the kind the checker expects: {kind}"


def serve(stdin, stdout) -> None:
    while (header := _read_exactly(stdin, 4)) is not None:
        body = _read_exactly(stdin, int.from_bytes(header, "big"))
        if body is None:
            return
        try:
            reply = answer(read_json(body))
        except MemoryError:
            _write(stdout, {"failed": "memory"})
            return
        except ValueError as exc:  # read_json's: what the record was instead
            reply = {"malformed": f"the record {exc}"}
        _write(stdout, reply)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memory-mb", type=int, default=512)
    args = parser.parse_args(argv)
    limit = args.memory_mb * MIB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name in checkers.NAMES:  # imported before the first request, not during it
        checkers.load(name)
    sys.stdout.buffer.write(b"\0\0\0\0")  # ready: an empty frame
    sys.stdout.buffer.flush()
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
