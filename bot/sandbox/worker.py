"""The fork-server: imports torch once, then forks one locked-down child per submission.

Run as `python -m bot.sandbox.worker`; it reads submissions as JSON lines on stdin and
answers on stdout (bot.sandbox.client speaks to it). One child is kept forked, jailed and
waiting, so a submission only pays for the run itself. A child is pid 1 of its own pid
namespace: killing it on a timeout kills everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

os.environ["OMP_NUM_THREADS"] = "1"  # before torch: forked children must not inherit pools

from bot.sandbox import harness, jail, seccomp  # noqa: E402
from bot.sandbox import syscalls as sc
from bot.sandbox.cgroups import Cgroups  # noqa: E402
from bot.sandbox.protocol import (  # noqa: E402
    ERROR,
    MEMORY,
    OUTPUT_LIMIT,
    TIMEOUT,
    Limits,
    decode,
    encode,
    refused,
)

log = logging.getLogger("sandbox.worker")
NAMESPACES = sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWNET | sc.CLONE_NEWIPC | \
    sc.CLONE_NEWUTS


@dataclass
class Slot:
    """A child that is jailed and waiting for its submission."""

    pid: int
    request_w: int
    result_r: int
    out_r: int
    err_r: int
    cgroup: str | None
    gpu: bool
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    output_total: int = 0


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


class ForkServer:
    def __init__(self, limits: Limits | None = None, parallel: int | None = None):
        self.limits = limits = limits or Limits()
        self.cgroups = Cgroups.create(limits)
        self.slots = asyncio.Semaphore(parallel or max(1, os.cpu_count() or 1))
        self.gpu_lock = asyncio.Lock()  # one GPU job at a time
        self.ready: Slot | None = None
        self.data_now = jail.vm_data_bytes()

    # -- preparing a child (blocking, ~10 ms) --------------------------------------------

    def prepare(self, gpu: bool = False) -> Slot:
        sync_r, sync_w = os.pipe()
        go_r, go_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        cgroup = self.cgroups.new() if self.cgroups else None
        keeper = os.fork()
        if keeper == 0:  # the keeper: new namespaces, then a pid-1 child, then gone
            try:
                os.setsid()
                sc.unshare(NAMESPACES)
                child = os.fork()
                if child == 0:
                    self._child(sync_w, go_r, result_w, out_w, err_w, gpu)
                os.write(sync_w, child.to_bytes(4, "little"))
            finally:
                os._exit(0)
        for fd in (sync_w, go_r, result_w, out_w, err_w):
            os.close(fd)
        try:
            child = int.from_bytes(_read_exactly(sync_r, 4), "little")
            os.waitpid(keeper, 0)
            if cgroup:
                self.cgroups.add(cgroup, child)
            if _read_exactly(sync_r, 1) != b"M":  # the child made its user namespace
                raise RuntimeError("sandbox child failed to start")
            jail.write_id_maps(child)
            os.write(go_w, b"G")
            if _read_exactly(sync_r, 1) != b"R":
                raise RuntimeError("sandbox child failed to lock down")
        except (EOFError, OSError, RuntimeError) as exc:
            for fd in (go_w, result_r, out_r, err_r):
                os.close(fd)
            if cgroup:
                self.cgroups.remove(cgroup)
            raise RuntimeError(f"cannot prepare a sandbox: {exc}") from None
        finally:
            os.close(sync_r)
        for fd in (out_r, err_r, result_r):
            os.set_blocking(fd, False)
        return Slot(child, go_w, result_r, out_r, err_r, cgroup, gpu)

    def _child(self, sync_w: int, go_r: int, result_w: int, out_w: int, err_w: int,
               gpu: bool) -> None:
        """pid 1 of the sandbox. Never returns."""
        status = 70
        try:
            jail.build_root(self.limits, gpu)
            os.setgroups([])  # root's supplementary groups must not come along
            sc.unshare(sc.CLONE_NEWUSER)
            os.write(sync_w, b"M")
            if _read_exactly(go_r, 1) != b"G":
                os._exit(71)
            # Become the namespace's root, which is `nobody` outside: from here on the
            # host sees an unprivileged user.
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            # Only now: the keeper (our first parent) is gone and the worker adopted us.
            sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
            keep = (go_r, result_w, out_w, err_w)
            jail.lock_down(self.limits, (sync_w, *keep), self.data_now)
            os.write(sync_w, b"R")
            os.close(sync_w)
            size = int.from_bytes(_read_exactly(go_r, 4), "little")
            request = json.loads(_read_exactly(go_r, size))
            os.close(go_r)
            null = os.open("/dev/null", os.O_RDONLY)
            for fd, target in ((null, 0), (out_w, 1), (err_w, 2)):
                os.dup2(fd, target)
                os.close(fd)
            result = harness.run(request, self.limits.gpu_memory_fraction)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os.write(result_w, json.dumps(result, default=str).encode())
            status = 0
        except BaseException:  # noqa: BLE001 - report, never return into the worker's code
            with contextlib.suppress(Exception):
                import traceback
                os.write(2, traceback.format_exc().encode())
        finally:
            os._exit(status)

    def _take_slot(self, gpu: bool) -> Slot:
        if not gpu and self.ready is not None:
            slot, self.ready = self.ready, None
            return slot
        return self.prepare(gpu)

    def close(self) -> None:
        """Stop the child kept waiting, and give back its cgroup."""
        slot, self.ready = self.ready, None
        if slot is None:
            return
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(slot.pid, signal.SIGKILL)
            os.waitpid(slot.pid, 0)
        for fd in (slot.request_w, slot.result_r, slot.out_r, slot.err_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if slot.cgroup:
            self.cgroups.remove(slot.cgroup)

    def refill(self) -> None:
        if self.ready is None:
            try:
                self.ready = self.prepare()
            except RuntimeError:
                log.exception("could not pre-fork a sandbox child")

    # -- running a submission ------------------------------------------------------------

    async def execute(self, submission: dict) -> dict:
        code = submission.get("code")
        if not isinstance(code, str):
            return refused("the submission has no code text")
        if len(code.encode("utf-8", "surrogatepass")) > self.limits.code_max_bytes:
            return refused(f"the code is larger than {self.limits.code_max_bytes // 1024} KB")
        gpu = submission.get("device") == "cuda" and os.path.exists("/dev/nvidiactl")
        async with self.slots:
            if gpu:
                async with self.gpu_lock:
                    return await self._execute(submission, gpu=True)
            return await self._execute(submission, gpu=False)

    async def _execute(self, submission: dict, gpu: bool) -> dict:
        loop = asyncio.get_running_loop()
        try:
            slot = self._take_slot(gpu)
        except RuntimeError as exc:
            return {**refused(str(exc)), "status": ERROR}
        if not gpu:
            loop.call_soon(self.refill)  # the next submission finds a child waiting
        started = time.perf_counter()
        payload = json.dumps({k: submission.get(k) for k in
                              ("code", "mode", "checker", "device")}).encode()
        pidfd = os.pidfd_open(slot.pid)
        exited = loop.create_future()
        overflow = asyncio.Event()
        loop.add_reader(pidfd, lambda: exited.done() or exited.set_result(None))
        for fd, buffer in ((slot.out_r, slot.out), (slot.err_r, slot.err)):
            loop.add_reader(fd, self._drain, slot, fd, buffer, overflow)
        try:
            await loop.run_in_executor(None, _send, slot.request_w, payload)
            overflowing = asyncio.ensure_future(overflow.wait())
            done, _ = await asyncio.wait(
                [exited, overflowing], timeout=self.limits.wall_s,
                return_when=asyncio.FIRST_COMPLETED)
            overflowing.cancel()
            timed_out = not done
            if not exited.done():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGKILL)
                await exited
            _, wait_status = await loop.run_in_executor(None, os.waitpid, slot.pid, 0)
        finally:
            for fd in (pidfd, slot.out_r, slot.err_r):
                loop.remove_reader(fd)
            os.close(pidfd)
        elapsed_ms = (time.perf_counter() - started) * 1000
        return self._verdict(slot, wait_status, timed_out, overflow.is_set(), elapsed_ms)

    def _drain(self, slot: Slot, fd: int, buffer: bytearray, overflow: asyncio.Event) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            asyncio.get_running_loop().remove_reader(fd)
            return
        slot.output_total += len(chunk)
        room = self.limits.output_keep_bytes - len(buffer)
        if room > 0:
            buffer += chunk[:room]
        if slot.output_total > self.limits.output_max_bytes:
            overflow.set()

    def _verdict(self, slot: Slot, wait_status: int, timed_out: bool, overflowed: bool,
                 elapsed_ms: float) -> dict:
        with contextlib.suppress(BlockingIOError):
            for fd, buffer in ((slot.out_r, slot.out), (slot.err_r, slot.err)):
                buffer += os.read(fd, max(0, self.limits.output_keep_bytes - len(buffer)))
        raw = b""
        with contextlib.suppress(BlockingIOError, OSError):
            raw = _read_all(slot.result_r)
        for fd in (slot.request_w, slot.result_r, slot.out_r, slot.err_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        oom = bool(slot.cgroup) and self.cgroups.oom_killed(slot.cgroup)
        if slot.cgroup:
            self.cgroups.remove(slot.cgroup)
        result = json.loads(raw) if raw else {}
        signalled = os.WIFSIGNALED(wait_status)
        if timed_out:
            result.update(status=TIMEOUT, error=f"stopped after {self.limits.wall_s:g} s")
        elif overflowed:
            result.update(status=OUTPUT_LIMIT, error="stopped: printed more than "
                          f"{self.limits.output_max_bytes // 1024} KB")
        elif signalled and os.WTERMSIG(wait_status) == signal.SIGXCPU:
            result.update(status=TIMEOUT, error=f"stopped after {self.limits.cpu_s} s of CPU")
        elif oom:
            result.update(status=MEMORY, error="stopped: used more memory than allowed")
        elif not raw:
            code = -os.WTERMSIG(wait_status) if signalled else os.WEXITSTATUS(wait_status)
            result.update(status=ERROR, exit_code=code,
                          error=f"the program ended abruptly (exit {code})")
        stdout, stderr = _text(slot.out), _text(slot.err)
        if slot.output_total > self.limits.output_keep_bytes:
            note = f"\n[output truncated: {slot.output_total} bytes in all]"
            stdout, stderr = (stdout + note, stderr) if len(slot.out) >= len(slot.err) \
                else (stdout, stderr + note)
        result.setdefault("exit_code", None)
        return {**result, "stdout": stdout, "stderr": stderr,
                "elapsed_ms": round(elapsed_ms, 2)}


def _send(fd: int, payload: bytes) -> None:
    os.write(fd, len(payload).to_bytes(4, "little"))
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def _text(data: bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


async def answer_lines(server: ForkServer, reader: asyncio.StreamReader,
                       write: Callable[[bytes], None]) -> None:
    """Answer JSON-line requests from `reader` (concurrently) until it closes."""
    tasks: set[asyncio.Task] = set()

    async def answer(request: dict) -> None:
        if request.get("op") == "info":
            reply = {"gpu": os.path.exists("/dev/nvidiactl"), "cgroups": bool(server.cgroups),
                     "pid": os.getpid()}
        else:
            reply = await server.execute(request)
        write(encode({**reply, "id": request.get("id")}))

    while line := await reader.readline():
        try:
            request = decode(line)
        except ValueError:
            continue
        task = asyncio.create_task(answer(request))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def serve_stdio(server: ForkServer) -> None:
    """One client: the process that started us, on stdin/stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=4 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    await answer_lines(server, reader, write)


async def serve_socket(server: ForkServer, address: str, mode: int = 0o660) -> None:
    """`tutor sandbox serve`: any number of bot processes, on a Unix socket or loopback."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await answer_lines(server, reader, writer.write)
        finally:
            writer.close()

    kind, _, where = address.partition(":")
    if kind == "unix":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(where)
        listener = await asyncio.start_unix_server(client, where, limit=4 * 1024 * 1024)
        os.chmod(where, mode)  # 660: the bot's group may connect; nobody else
    elif kind == "tcp":
        host, _, port = where.rpartition(":")
        listener = await asyncio.start_server(client, host, int(port), limit=4 * 1024 * 1024)
    else:
        raise SystemExit(f"--listen takes unix:/path or tcp:host:port, not {address!r}")
    log.info("sandbox worker listening on %s", address)
    async with listener:
        await listener.serve_forever()


def _warm_up(torch) -> None:
    """Run a tiny training step once, so lazy initialisation (cpuinfo reads /proc, kernel
    dispatch tables, autograd) happens here and not in every jailed child."""
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(torch.ones(4, 3)), torch.zeros(4, 1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limits", type=json.loads, default={},
                        help="JSON object overriding fields of protocol.Limits")
    parser.add_argument("--parallel", type=int, default=None)
    parser.add_argument("--listen", help="serve on unix:/path or tcp:host:port instead of "
                                         "stdin/stdout")
    parser.add_argument("--mode", default="660", help="the Unix socket's permissions (octal)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import torch  # once, here: every child starts with it imported

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    _warm_up(torch)
    for checker in ("train_loop",):
        with contextlib.suppress(ImportError):
            __import__(f"content.checkers.{checker}")
    if not seccomp.available():  # loads libseccomp now, before any child is forked
        log.error("libseccomp is missing: sandbox children cannot be locked down")
    sc.prctl(sc.PR_SET_CHILD_SUBREAPER, 1)  # orphaned sandbox children come back to us
    server = ForkServer(Limits(**args.limits), args.parallel)
    server.refill()
    # A service stopped with SIGTERM still gives back its waiting child and cgroup.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        asyncio.run(serve_socket(server, args.listen, int(args.mode, 8)) if args.listen
                    else serve_stdio(server))
    finally:
        server.close()


if __name__ == "__main__":
    main()
