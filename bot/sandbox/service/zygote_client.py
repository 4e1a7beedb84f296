"""The sandbox service's side of its zygote (bot.sandbox.jail.zygote): start it, ask it for
jailed children over its control socket, and hear from it when each one ends (it is their
parent and reaps them). Requests and replies are matched by id; exits by child number.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys

from bot.sandbox.process import PROJECT_ROOT
from bot.sandbox.protocol import Limits
from bot.sandbox.service.loop_io import ready

log = logging.getLogger("sandbox.service")
PREPARE_TIMEOUT_S = 30.0
ZYGOTE_START_TIMEOUT_S = 120.0


def zygote_environment() -> dict[str, str]:
    """Built from nothing: whatever the service was started with (a token in a shell, say)
    never reaches the zygote's memory, so no child can find it there."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(PROJECT_ROOT),
            "PYTHONUNBUFFERED": "1", "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}


class ZygoteGone(RuntimeError):
    pass


class ZygoteClient:
    """This service's handle on its zygote process: asks it for children, and hears from it
    when each one ends (it is their parent)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future] = {}
        self._exits: dict[int, asyncio.Future] = {}
        self._reader: asyncio.Task | None = None

    async def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bot.sandbox.jail.zygote",
                 "--control", str(theirs.fileno()),
                 "--limits", json.dumps(dataclasses.asdict(self.limits))],
                pass_fds=(theirs.fileno(),), env=zygote_environment(), cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno())
        ours.setblocking(False)
        self.control = ours
        loop = asyncio.get_running_loop()
        try:
            hello = await asyncio.wait_for(loop.sock_recv(ours, 4096), ZYGOTE_START_TIMEOUT_S)
        except TimeoutError:
            hello = b""
        if not hello:
            self.stop()
            raise ZygoteGone("the sandbox zygote did not start (see its log above)")
        self._reader = asyncio.ensure_future(self._read(ours))
        log.debug("sandbox zygote ready (pid %d)", self.process.pid)

    async def _read(self, control: socket.socket) -> None:
        """Route the zygote's messages: replies to our requests, and child exits."""
        while True:
            await ready(control)
            try:
                message, fds, _, _ = socket.recv_fds(control, 4096, 4)
            except BlockingIOError:
                continue
            except OSError:
                message, fds = b"", []
            if not message:
                break
            reply = json.loads(message)
            if "exited" in reply:
                self.exited(reply["exited"]).set_result((reply["status"], reply["cpu_s"]))
                continue
            future = self._replies.pop(reply.get("id"), None)
            if future is None or future.done():
                for fd in fds:
                    os.close(fd)
            else:
                future.set_result((reply, fds))
        self._gone()

    def _gone(self) -> None:
        """The zygote ended: no reply will come, and its children died with it."""
        for future in self._replies.values():
            if not future.done():
                future.set_exception(ZygoteGone("the sandbox zygote exited"))
        self._replies.clear()
        for future in self._exits.values():
            if not future.done():
                future.set_result((signal.SIGKILL, 0.0))
        self.control = None

    def exited(self, child: int) -> asyncio.Future:
        """(wait status, CPU seconds) of child number `child`, once it has ended."""
        if child not in self._exits:
            self._exits[child] = asyncio.get_running_loop().create_future()
            if self.control is None:
                self._exits[child].set_result((signal.SIGKILL, 0.0))
        return self._exits[child]

    def forget(self, child: int) -> None:
        self._exits.pop(child, None)

    async def child(self, gpu: bool, procs: list[str]) -> tuple[int, int, list[int]]:
        """A jailed child: (pid, child number, [request_w, result_r, out_r, err_r])."""
        if self.control is None:
            raise ZygoteGone("the sandbox zygote is not running")
        request_id = next(self._ids)
        future = self._replies[request_id] = asyncio.get_running_loop().create_future()
        try:
            await asyncio.get_running_loop().sock_sendall(self.control, json.dumps(
                {"id": request_id, "gpu": gpu, "procs": procs}).encode())
            reply, fds = await asyncio.wait_for(future, PREPARE_TIMEOUT_S)
        except TimeoutError:
            raise ZygoteGone("the sandbox zygote stopped answering") from None
        finally:
            self._replies.pop(request_id, None)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["pid"], reply["child"], fds

    def stop(self) -> None:
        control, self.control = self.control, None
        if control is not None:
            control.close()  # the zygote exits when its socket closes
        if self._reader is not None:
            self._reader.cancel()
        if self.process is not None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._gone()
