"""The zygote: imports torch once, then forks jailed children, and never sees a submission.

The sandbox service (bot.sandbox.service) starts this module with exec and a clean
environment, and talks to it over a SOCK_SEQPACKET socket (`--control FD`). Each request
asks for one child: {"id", "gpu": bool, "procs": [cgroup.procs paths]}. The zygote forks
it, locks it down, and answers {"id", "pid", "child"} with the child's four pipe ends
(request, result, stdout, stderr) as SCM_RIGHTS; it keeps no copy. When a child ends, the
zygote reaps it and reports {"exited": child, "status": wait status, "cpu_s": seconds}.
Submissions go from the service straight to the child, so no child can find an earlier
learner's code in memory it inherited: that memory never held any.

A child is pid 1 of its own pid namespace, made by one fork: the zygote asks for a new pid
namespace for its next child, forks, and returns to its own (a fork is most of the cost of
a child: the zygote maps all of torch).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import select
import signal
import socket
import sys

os.environ["OMP_NUM_THREADS"] = "1"  # before torch: forked children must not inherit pools

from bot.sandbox.jail import harness, jail, seccomp  # noqa: E402
from bot.sandbox.jail import syscalls as sc  # noqa: E402
from bot.sandbox.protocol import Limits, frame  # noqa: E402

log = logging.getLogger("sandbox.zygote")
NAMESPACES = sc.CLONE_NEWNS | sc.CLONE_NEWNET | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS
MESSAGE_MAX = 65536


def read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


class ChildForker:
    """Inside the zygote: forks, jails and holds each child until its submission comes, and
    reaps it when it ends."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.data_now = jail.vm_data_bytes()
        self.own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.children: dict[int, tuple[int, int]] = {}  # pidfd -> (pid, child number)
        self.numbers = itertools.count(1)

    def prepare(self, gpu: bool, procs: list[str]) -> tuple[int, int, list[int]]:
        """Fork, jail and hold one child: (pid, child number, the service's pipe ends)."""
        sync_r, sync_w = os.pipe()
        go_r, go_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        theirs = [go_w, result_r, out_r, err_r]
        sc.unshare(sc.CLONE_NEWPID)  # our next child is pid 1 of a new namespace
        try:
            child = os.fork()
            if child == 0:
                self._child(sync_w, go_r, result_w, out_w, err_w, gpu)
        finally:
            sc.setns(self.own_pid_ns, sc.CLONE_NEWPID)  # ... and only that one
        for fd in (sync_w, go_r, result_w, out_w, err_w):
            os.close(fd)
        number = next(self.numbers)
        self.children[os.pidfd_open(child)] = (child, number)
        try:
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
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            raise PrepareError(f"cannot prepare a sandbox: {exc}") from None
        finally:
            os.close(sync_r)
        return child, number, theirs

    def reap(self, pidfd: int) -> dict:
        """A child ended: its wait status and CPU time, for the service."""
        pid, number = self.children.pop(pidfd)
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        return {"exited": number, "status": status, "cpu_s": usage.ru_utime + usage.ru_stime}

    def _child(self, sync_w: int, go_r: int, result_w: int, out_w: int, err_w: int,
               gpu: bool) -> None:
        """pid 1 of the sandbox. Never returns."""
        status = 70
        try:
            for number in (signal.SIGTERM, signal.SIGINT):  # not the zygote's handlers
                signal.signal(number, signal.SIG_DFL)
            sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)  # the zygote goes: so do we
            os.setsid()
            sc.unshare(NAMESPACES)
            jail.build_root(self.limits, gpu)
            # From here on the host sees `nobody`, which also creates (and so is charged
            # for) the user namespace; the zygote maps it to root inside.
            jail.become_sandbox_user()
            # The uid change cleared this; a zygote gone before it fails the write below.
            sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
            sc.unshare(sc.CLONE_NEWUSER)
            os.write(sync_w, b"M")
            if read_exactly(go_r, 1) != b"G":
                os._exit(71)
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
    pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def serve(forker: ChildForker, control: socket.socket) -> None:
    """Answer child requests and report child exits until the service closes the socket."""
    control.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    while True:
        readable, _, _ = select.select([control, *forker.children], [], [])
        for fd in readable:
            if fd is not control:
                control.send(json.dumps(forker.reap(fd)).encode())
                continue
            message = control.recv(MESSAGE_MAX)
            if not message:
                return
            request = json.loads(message)
            try:
                pid, number, fds = forker.prepare(bool(request.get("gpu")),
                                                  list(request.get("procs", [])))
            except PrepareError as exc:
                control.send(json.dumps({"id": request.get("id"), "error": str(exc)}).encode())
                continue
            try:
                socket.send_fds(control, [json.dumps({"id": request.get("id"), "pid": pid,
                                                      "child": number}).encode()], fds)
            finally:
                for fd in fds:
                    os.close(fd)


def _warm_up(torch) -> None:
    """Run a tiny training step once, so lazy initialisation (cpuinfo reads /proc, kernel
    dispatch tables, autograd) happens here and not in every jailed child. On a GPU host
    without the backward pass: autograd's first backward asks the CUDA driver for its
    devices, and no child forked after that can initialise CUDA (on an H200 every GPU run
    failed with "CUDA error: initialization error")."""
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(torch.ones(4, 3)), torch.zeros(4, 1))
    if os.path.exists("/dev/nvidiactl"):
        for parameter in model.parameters():
            parameter.grad = torch.zeros_like(parameter)
    else:
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
    signal.signal(signal.SIGTERM, lambda *_: _leave())
    try:
        serve(ChildForker(Limits(**args.limits)), control)
    except (ConnectionError, EOFError):
        pass
    _leave()


def _leave() -> None:
    """Exit without the interpreter's teardown: nothing here needs it (the service removes
    the cgroups, and each child dies with the zygote: PR_SET_PDEATHSIG), and unloading torch
    took seconds on a busy machine while the service, and a bot stopping, waited on it."""
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
