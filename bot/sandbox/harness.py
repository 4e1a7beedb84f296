"""Inside the locked child: compile, run or check the learner's code, and say how it went.

Tracebacks show the learner's own frames and lines only, never the harness's.
"""

from __future__ import annotations

import importlib
import linecache
import sys
import traceback

from bot.sandbox.protocol import ERROR, LEARNER_FILE, MEMORY, OK, REFUSED


def _register_source(code: str) -> None:
    """So tracebacks can quote the learner's lines."""
    lines = code.splitlines(keepends=True)
    linecache.cache[LEARNER_FILE] = (len(code), None, lines, LEARNER_FILE)


def learner_traceback(exc: BaseException) -> str:
    """The traceback cut down to frames in the learner's code (the error line itself
    always stays)."""
    tb = traceback.TracebackException.from_exception(exc)
    tb.stack = traceback.StackSummary.from_list(
        [frame for frame in tb.stack if frame.filename == LEARNER_FILE])
    tb.__cause__ = tb.__context__ = None
    return "".join(tb.format())


def learner_line(exc: BaseException) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename == LEARNER_FILE:
        return exc.lineno
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == LEARNER_FILE:
            line = lineno
    return line


def _out_of_memory(exc: BaseException) -> bool:
    """Python's MemoryError, or torch's allocator failing (CPU or CUDA)."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and ("allocate memory" in text or "out of memory" in text))


def device_for(requested: str, gpu_memory_fraction: float) -> tuple[str, str | None]:
    """The device learner code gets, and a note when the GPU was asked for but absent."""
    if requested != "cuda":
        return "cpu", None
    import torch  # already imported by the worker: free here

    if not torch.cuda.is_available():
        return "cpu", "No GPU is available here: ran on the CPU."
    torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction, 0)
    return "cuda", None


def run(request: dict, gpu_memory_fraction: float) -> dict:
    """Execute one submission; return the result fields the child reports."""
    code = request["code"]
    try:
        compiled = compile(code, LEARNER_FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes
        line = getattr(exc, "lineno", None)
        where = f"line {line}: " if line else ""
        return {"status": REFUSED, "exit_code": None,
                "error": f"{where}not valid Python: {getattr(exc, 'msg', exc)}",
                "line": line}
    _register_source(code)
    device, note = device_for(request.get("device", "cpu"), gpu_memory_fraction)
    result: dict = {"device": device, "note": note}
    if request.get("mode") == "check":
        checker = importlib.import_module(f"content.checkers.{request['checker']}")
        report = checker.check(code, device=device)
        return {**result, "status": report.get("status", OK), "exit_code": 0,
                "report": report}
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "device": device}
    try:
        exec(compiled, namespace)
    except SystemExit as exc:
        status = 0 if exc.code is None else exc.code
        exit_code = status if isinstance(status, int) else 1
        if not isinstance(status, int):
            print(status, file=sys.stderr)
        return {**result, "status": OK if exit_code == 0 else ERROR, "exit_code": exit_code}
    except BaseException as exc:  # noqa: BLE001 - whatever the learner raised
        sys.stderr.write(learner_traceback(exc))
        return {**result, "status": MEMORY if _out_of_memory(exc) else ERROR, "exit_code": 1,
                "line": learner_line(exc), "error": f"{type(exc).__name__}: {exc}"}
    return {**result, "status": OK, "exit_code": 0}
