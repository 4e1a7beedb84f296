"""Inside the locked child: compile, run or observe the learner's code.

`run` returns the exit status the child ends with and the detail it reports. The service
decides the status from the exit status, signals and cgroup events; the detail only adds
what the parent cannot see (the learner's error line, a check's observations). Tracebacks
show the learner's own frames and lines only, never the harness's.
"""

from __future__ import annotations

import importlib
import linecache
import sys
import traceback

from bot.sandbox.protocol import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, LEARNER_FILE

ERROR_TEXT_MAX = 2000  # an exception message can be any size; the report stays small


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
    import torch  # already imported by the zygote: free here

    if not torch.cuda.is_available():
        return "cpu", "No GPU is available here: ran on the CPU."
    torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction, 0)
    return "cuda", None


def _short(text: str) -> str:
    return text if len(text) <= ERROR_TEXT_MAX else text[:ERROR_TEXT_MAX] + " [...]"


def run(request: dict, gpu_memory_fraction: float) -> tuple[int, dict]:
    """Execute one submission: (exit status, detail for the service)."""
    device, note = device_for(request.get("device", "cpu"), gpu_memory_fraction)
    detail: dict = {"device": device, "note": note}
    if request.get("mode") == "check":
        return _observe(request, device, detail)
    code = request["code"]
    try:
        compiled = compile(code, LEARNER_FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes
        line = getattr(exc, "lineno", None)
        where = f"line {line}: " if line else ""
        return EXIT_REFUSED, {"refused": True, "line": line,
                              "error": _short(f"{where}not valid Python: "
                                              f"{getattr(exc, 'msg', exc)}")}
    _register_source(code)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "device": device}
    try:
        exec(compiled, namespace)
    except SystemExit as exc:
        status = 0 if exc.code is None else exc.code
        if not isinstance(status, int):
            print(status, file=sys.stderr)
            status = EXIT_ERROR
        return status & 0xFF, detail
    except BaseException as exc:  # noqa: BLE001 - whatever the learner raised
        sys.stderr.write(learner_traceback(exc))
        return EXIT_ERROR, {**detail, "line": learner_line(exc),
                            "out_of_memory": _out_of_memory(exc),
                            "error": _short(f"{type(exc).__name__}: {exc}")}
    return EXIT_OK, detail


def _observe(request: dict, device: str, detail: dict) -> tuple[int, dict]:
    """A code check: run the observer the service named, report what it saw."""
    observer = importlib.import_module(request["observer"])  # imported by the zygote
    try:
        observations = observer.observe(request["code"], request["plan"], device)
    except MemoryError as exc:
        return EXIT_ERROR, {**detail, "out_of_memory": True, "error": f"MemoryError: {exc}"}
    error = observations.get("error")
    if error:
        error["message"] = _short(str(error.get("message")))
    return (EXIT_ERROR if error else EXIT_OK), {**detail, "observations": observations}
