"""The zygote: imports torch once, then forks jailed children, and never sees a submission.

The sandbox service (bot.sandbox.worker) starts this module with exec and a clean
environment, and talks to it over a SOCK_SEQPACKET socket (`--control FD`). Each request
asks for one child: {"gpu": bool, "procs": [cgroup.procs paths]}. The zygote forks it,
locks it down, and sends back {"pid": n} with the child's four pipe ends (request, result,
stdout, stderr) as SCM_RIGHTS; it keeps no copy. Submissions go from the service straight
to the child, so no child can find an earlier learner's code in memory it inherited: that
memory never held any.

A child is pid 1 of its own pid namespace. It is forked through a short-lived keeper, so it
is adopted by the service (a child subreaper), which waits for it and reads its exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import sys

os.environ["OMP_NUM_THREADS"] = "1"  # before torch: forked children must not inherit pools

from bot.sandbox import harness, jail, seccomp  # noqa: E402
from bot.sandbox import syscalls as sc  # noqa: E402
from bot.sandbox.protocol import Limits, frame  # noqa: E402

log = logging.getLogger("sandbox.zygote")
NAMESPACES = sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWNET | sc.CLONE_NEWIPC | \
    sc.CLONE_NEWUTS
MESSAGE_MAX = 65536


def read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


class Zygote:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.data_now = jail.vm_data_bytes()

    def prepare(self, gpu: bool, procs: list[str]) -> tuple[int, list[int]]:
        """Fork, jail and hold one child; return its pid and the service's pipe ends."""
        sync_r, sync_w = os.pipe()
        go_r, go_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        theirs = [go_w, result_r, out_r, err_r]
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
        child = None
        try:
            child = int.from_bytes(read_exactly(sync_r, 4), "little")
            os.waitpid(keeper, 0)  # from here the child is the service's (subreaper)
            for path in procs:
                with open(path, "w") as procs_file:
                    procs_file.write(str(child))
            if read_exactly(sync_r, 1) != b"M":  # the child made its user namespace
                raise RuntimeError("sandbox child failed to start")
            jail.write_id_maps(child)
            os.write(go_w, b"G")
            if read_exactly(sync_r, 1) != b"R":
                raise RuntimeError("sandbox child failed to lock down")
        except (EOFError, OSError, RuntimeError) as exc:
            for fd in theirs:
                os.close(fd)
            if child:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            raise PrepareError(f"cannot prepare a sandbox: {exc}", child) from None
        finally:
            os.close(sync_r)
        return child, theirs

    def _child(self, sync_w: int, go_r: int, result_w: int, out_w: int, err_w: int,
               gpu: bool) -> None:
        """pid 1 of the sandbox. Never returns."""
        status = 70
        try:
            for number in (signal.SIGTERM, signal.SIGINT):  # not the zygote's handlers
                signal.signal(number, signal.SIG_DFL)
            jail.build_root(self.limits, gpu)
            os.setgroups([])  # root's supplementary groups must not come along
            sc.unshare(sc.CLONE_NEWUSER)
            os.write(sync_w, b"M")
            if read_exactly(go_r, 1) != b"G":
                os._exit(71)
            # Become the namespace's root, which is `nobody` outside: from here on the
            # host sees an unprivileged user.
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            # Only now: the keeper (our first parent) is gone and the service adopted us.
            sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
            keep = (go_r, result_w, out_w, err_w)
            jail.lock_down(self.limits, (sync_w, *keep), self.data_now)
            os.write(sync_w, b"R")
            os.close(sync_w)
            size = int.from_bytes(read_exactly(go_r, 4), "little")
            request = json.loads(read_exactly(go_r, size))
            os.close(go_r)
            null = os.open("/dev/null", os.O_RDONLY)
            for fd, target in ((null, 0), (out_w, 1), (err_w, 2)):
                os.dup2(fd, target)
                os.close(fd)
            # Processes the learner forks keep running learner code, not ours: they must
            # not add a second report.
            os.register_at_fork(after_in_child=lambda: os.close(result_w))
            status, detail = harness.run(request, self.limits.gpu_memory_fraction)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            with contextlib.suppress(OSError):
                _write_all(result_w, frame(detail))
        except EOFError:
            pass  # the service went away before a submission came: nothing to report
        except BaseException:  # noqa: BLE001 - report, never return into the zygote's code
            with contextlib.suppress(Exception):
                import traceback
                os.write(2, traceback.format_exc().encode())
        finally:
            os._exit(status)


class PrepareError(RuntimeError):
    def __init__(self, message: str, pid: int | None):
        super().__init__(message)
        self.pid = pid


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def serve(zygote: Zygote, control: socket.socket) -> None:
    """Answer child requests until the service closes the socket."""
    control.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    while message := control.recv(MESSAGE_MAX):
        request = json.loads(message)
        try:
            pid, fds = zygote.prepare(bool(request.get("gpu")), list(request.get("procs", [])))
        except PrepareError as exc:
            control.send(json.dumps({"error": str(exc), "pid": exc.pid}).encode())
            continue
        try:
            socket.send_fds(control, [json.dumps({"pid": pid}).encode()], fds)
        finally:
            for fd in fds:
                os.close(fd)


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
    parser.add_argument("--control", type=int, required=True, help="SOCK_SEQPACKET fd")
    parser.add_argument("--limits", type=json.loads, default={})
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import torch  # once, here: every child starts with it imported

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    _warm_up(torch)
    from content.checkers import observers

    for module in observers():  # what children run for code checks, imported once here
        __import__(module)
    if not seccomp.available():  # loads libseccomp now, before any child is forked
        log.error("libseccomp is missing: sandbox children cannot be locked down")
    control = socket.socket(fileno=args.control)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(Zygote(Limits(**args.limits)), control)
    except (ConnectionError, EOFError):
        pass


if __name__ == "__main__":
    main()
