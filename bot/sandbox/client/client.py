"""The bot's side of the sandbox: the sandbox service (bot.sandbox.service), a process of
our own or a shared one, spoken to in JSON lines; each reply is read as a typed RunResult.

The bot never imports torch; the service does. Admission happens here: a bounded queue,
one run in flight per learner and a per-learner rate limit, each refused with a message a
learner can act on. Every run is answered: if the service dies, it is restarted and the runs
it held are run again once, then reported as a crash; a run with no reply by its deadline
(the wall limit plus a margin) is answered with an error, and its learner may submit again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import sys
import time
from collections import defaultdict, deque
from collections.abc import Callable

from bot.sandbox.behaviour import runs as behaviour_runs
from bot.sandbox.process import PROJECT_ROOT, service_environment
from bot.sandbox.protocol import Limits, RunResult, ServiceInfo, decode, encode, failed

log = logging.getLogger(__name__)
RESTART_EVERY_S = 10.0


async def connect(address: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """"unix:/path": the socket of a `tutor sandbox serve` on this machine (the protocol has
    no authentication; a fleet across machines goes through Redis, `fleet`)."""
    kind, _, where = address.partition(":")
    if kind == "unix":
        return await asyncio.open_unix_connection(where, limit=1 << 22)
    raise ValueError(f"sandbox address must be unix:/path, redis:// or rediss://, "
                     f"not {address!r}")


class SandboxBusy(Exception):
    """Not admitted; the message says why and what to do. `reason`: learner, rate, full,
    unreachable or busy (for the refusals metric)."""

    def __init__(self, message: str, reason: str = "busy"):
        super().__init__(message)
        self.reason = reason


class SandboxClient:
    def __init__(self, *, limits: Limits | None = None, parallel: int | None = None,
                 max_queue: int = 32, runs_per_minute: int = 6,
                 clock: Callable[[], float] = time.monotonic, address: str | None = None,
                 allow_unbounded_memory: bool = False):
        """`address` ("unix:/path"): use a running `tutor sandbox serve`
        (shared by several bot processes) instead of starting a service of our own.
        `allow_unbounded_memory`: the operator's opt-in to run code on a host where the
        service can set no cgroup memory limit (our own service only)."""
        self.address = address
        self.allow_unbounded_memory = allow_unbounded_memory
        self.limits = limits or Limits()
        self.parallel = parallel
        self.max_queue = max_queue
        self.runs_per_minute = runs_per_minute
        self.clock = clock
        self._proc: asyncio.subprocess.Process | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, tuple[dict, asyncio.Future]] = {}
        self._ids = itertools.count(1)
        self._in_flight: set[str] = set()
        self._recent: dict[str, deque[float]] = defaultdict(deque)
        self._reader: asyncio.Task | None = None
        self._stderr: asyncio.Task | None = None
        self._restarts = 0
        self._stopping = False
        self._next_start = 0.0  # the loop's time: when a dead service may be started again

    # -- the service process -------------------------------------------------------------

    async def start(self, keep_trying: bool = True) -> ServiceInfo:
        """Start the service (torch import: a few seconds), or connect to the shared one,
        and return what it says of itself. A shared one is waited for a minute (it may be
        importing torch), or only tried once without `keep_trying` (a command)."""
        self._stopping = False
        if self.address:
            reader, self._writer = await self._connect_when_up(60.0 if keep_trying else 0.0)
        else:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.sandbox.service",
                "--limits", json.dumps(dataclasses.asdict(self.limits)),
                *(["--parallel", str(self.parallel)] if self.parallel else []),
                *(["--allow-unbounded-memory"] if self.allow_unbounded_memory else []),
                cwd=PROJECT_ROOT, env=service_environment(), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=1 << 22)
            reader, self._writer = self._proc.stdout, self._proc.stdin
            self._stderr = asyncio.create_task(self._log_stderr(self._proc))
        self._reader = asyncio.create_task(self._read_replies(reader, self._writer))
        return ServiceInfo.from_wire(await self._request({"op": "info"}))

    async def _connect_when_up(self, wait_s: float = 60.0):
        """The service may still be importing torch (a container that started with us)."""
        deadline = asyncio.get_running_loop().time() + wait_s
        while True:
            try:
                return await connect(self.address)
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.5)

    async def stop(self) -> None:
        self._stopping = True
        proc, self._proc = self._proc, None
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        if proc and proc.returncode is None:
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        for task in (self._reader, self._stderr):
            if task:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    @property
    def service_pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    async def _read_replies(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while line := await reader.readline():
                with contextlib.suppress(ValueError):
                    reply = decode(line)
                    entry = self._pending.pop(reply.pop("id", None), None)
                    if entry and not entry[1].done():
                        entry[1].set_result(reply)
        returncode = await self._proc.wait() if self._proc else None
        if not self._stopping and writer is self._writer:
            await self._recover(returncode)

    async def _log_stderr(self, proc: asyncio.subprocess.Process) -> None:
        while line := await proc.stderr.readline():
            log.warning("sandbox service: %s", line.decode(errors="replace").rstrip())

    async def _recover(self, returncode: int | None) -> None:
        """The service died (or the shared one went away): start or reach a new one and
        answer every run it held."""
        self._restarts += 1
        if self.address and not self._pending:  # a shared service closes idle connections
            log.info("the sandbox service closed our idle connection; reconnecting")
        else:
            log.error("sandbox service lost (exit %s); restarting", returncode)
        held, self._pending = self._pending, {}
        self._writer = None
        for attempt in range(5 if self.address else 1):
            try:
                await self.start()
                break
            except Exception:  # noqa: BLE001
                log.exception("sandbox service could not be restarted (attempt %d)", attempt + 1)
                await asyncio.sleep(1)
        for request, future in held.values():
            if future.done():
                continue
            if request.get("retried") or self._writer is None:
                future.set_result(failed("the sandbox crashed while running this code",
                                         "crash"))
            else:
                asyncio.ensure_future(self._forward({**request, "retried": True}, future))

    async def _start_again(self) -> None:
        """A service that could not be restarted when it died is tried again by the next
        run (at most every RESTART_EVERY_S): the bot does not stay without one for life.
        Until it starts, runs fail as not judged (`_request` raises)."""
        down = self._writer is None or (self._proc and self._proc.returncode is not None)
        now = asyncio.get_running_loop().time()
        if not down or self._stopping or now < self._next_start:
            return
        self._next_start = now + RESTART_EVERY_S
        try:
            await self.start()
            log.warning("the sandbox service is back")
        except Exception:  # noqa: BLE001 - said here; the run is answered as not judged
            log.exception("the sandbox service could not be started again")

    async def _forward(self, request: dict, future: asyncio.Future) -> None:
        try:
            future.set_result(await self._request(request))
        except Exception as exc:  # noqa: BLE001
            if not future.done():
                future.set_exception(exc)

    async def _request(self, request: dict, deadline_s: float | None = None) -> dict:
        if self._writer is None or (self._proc and self._proc.returncode is not None):
            raise RuntimeError("the sandbox service is not running")
        request_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (request, future)
        try:
            # A connection the shared service just closed (idle) fails here; the reply
            # reader sees the close too, reconnects and sends what is pending again.
            with contextlib.suppress(ConnectionError):
                self._writer.write(encode({**request, "id": request_id}))
                await self._writer.drain()
            return await asyncio.wait_for(asyncio.shield(future), deadline_s)
        except TimeoutError:
            log.error("sandbox gave no reply within %.0f s; the run is given up", deadline_s)
            return failed(f"the sandbox did not answer within {deadline_s:.0f} s", "timeout")
        finally:
            self._pending.pop(request_id, None)  # frees the queue place, whatever happened

    # -- submissions ---------------------------------------------------------------------

    async def run(self, code: str, *, learner: str | None = None, mode: str = "run",
                  checker: str | None = None, device: str = "cpu",
                  behaviour: dict | None = None) -> RunResult:
        """Run code under the sandbox's limits; raise SandboxBusy when not admitted.
        `behaviour`: a behaviour check's block (bot/sandbox/behaviour.py)."""
        if learner is not None:
            self._admit(learner, rated=mode != "vet")
        deadline = (behaviour_runs(mode, behaviour) * self.limits.wall_s
                    + 2 * self.limits.reply_margin_s)
        try:
            await self._start_again()
            request = {"code": code, "mode": mode, "checker": checker, "device": device,
                       "learner": learner}
            if behaviour is not None:
                request["behaviour"] = behaviour
            reply = await self._request(request, deadline)
        finally:
            self._in_flight.discard(learner)
        result = RunResult.from_wire(reply)
        if result.busy:  # the service's own admission, across every bot
            raise SandboxBusy(result.stderr or "The code runner is busy; try again.")
        return result

    def _admit(self, learner: str, rated: bool = True) -> None:
        """`rated`: a learner's run counts toward their runs per minute; a deck trial's
        exercises, tried one after another, are held by the engine's rate per server."""
        if len(self._pending) >= self.max_queue:
            raise SandboxBusy("The code runner is busy right now; try again in a minute.",
                              reason="full")
        if learner in self._in_flight:
            raise SandboxBusy("Your previous code is still running; wait for its verdict.",
                              reason="learner")
        if rated:
            now, recent = self.clock(), self._recent[learner]
            while recent and now - recent[0] >= 60:
                recent.popleft()
            if len(recent) >= self.runs_per_minute:
                wait = 60 - (now - recent[0])
                raise SandboxBusy(f"That's {self.runs_per_minute} runs this minute; try "
                                  f"again in {wait:.0f} s.", reason="rate")
            recent.append(now)
        self._in_flight.add(learner)
