"""The sandbox service: takes submissions, runs each in a jailed child, decides the verdict.

Run as `python -m bot.sandbox.service` (JSON lines on stdin/stdout; the bot's client,
bot.sandbox.client.client, speaks to it), through `tutor sandbox serve` on a Unix socket,
or as one host of a fleet that takes its jobs from Redis (`fleet_host`, with SANDBOX_BROKER
set). Four kinds of process:
- this service: holds submissions, never runs learner code and never forks a jailed child;
  it decides each status (`verdict`);
- a few checker processes (`checker_pool`): judge code checks (`content.checkers`) under a
  memory limit and a deadline per verdict;
- the zygote (`bot.sandbox.jail.zygote`, started by exec with a clean environment): imports
  torch once and forks jailed children, but never sees a submission;
- one jailed child per submission; the zygote reaps it and tells this service how it
  ended. One child is kept ready, so a submission only pays for its run.
Its clients' connections are in `connections`, its handle on the zygote in `zygote_client`,
and a child's pipes, as it holds them, in `slot`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.sandbox import behaviour
from bot.sandbox.jail import cgroups as cgroup_limits
from bot.sandbox.jail.cgroups import Cgroups
from bot.sandbox.protocol import ERROR, OK, Limits, busy, failed, refused
from bot.sandbox.service.admission import Admission, Busy, default_slots
from bot.sandbox.service.checker_pool import CheckerPool, JudgeFailed, PoolLimits
from bot.sandbox.service.connections import ConnectionLimits, serve_socket, serve_stdio
from bot.sandbox.service.slot import Slot, send
from bot.sandbox.service.verdict import Ending, decide
from bot.sandbox.service.zygote_client import ZygoteClient, ZygoteGone
from content import checkers
from content.safe_text import code_span

log = logging.getLogger("sandbox.service")
BROKER_VARIABLE = "SANDBOX_BROKER"  # redis://user:password@host:port/db, for a fleet host
DISCARD_WAIT_S = 10.0  # how long a stop waits for the zygote to report a killed child


class TooLate(Exception):
    """A submission waited for a slot past its client's patience."""


def _seed() -> int:
    return secrets.randbelow(2**31 - 1) + 1


class SandboxService:
    """Admits submissions, runs each in a jailed child from the zygote and decides its
    result; code checks go on to the checker pool."""

    def __init__(self, limits: Limits | None = None, parallel: int | None = None,
                 cgroups: Cgroups | None = None, allow_unbounded_memory: bool = False,
                 judges: PoolLimits | None = None):
        self.limits = limits or Limits()
        self.cgroups = cgroups
        self.allow_unbounded_memory = allow_unbounded_memory
        self.admission = Admission(parallel or default_slots(self.limits.memory_mb))
        self.gpu_lock = asyncio.Lock()  # one GPU job at a time
        self.zygote = ZygoteClient(self.limits)
        self.checkers = CheckerPool(judges)
        self.ready: Slot | None = None
        self._refilling: asyncio.Task | None = None
        # Removing a cgroup waits for the kernel (up to seconds on v2): never on the loop.
        self._cleanup = ThreadPoolExecutor(2, thread_name_prefix="sandbox-cleanup")

    @property
    def memory_limited(self) -> bool:
        return self.cgroups is not None

    def info(self) -> dict:
        return {"gpu": os.path.exists("/dev/nvidiactl"),
                "cgroups": self.cgroups.version if self.cgroups else None,
                "limits": self.cgroups.describe() if self.cgroups else {},
                "memory_limited": self.memory_limited,
                "runs_code": self.memory_limited or self.allow_unbounded_memory,
                "slots": self.admission.slots,
                "pid": os.getpid(),
                "zygote_pid": self.zygote.process.pid if self.zygote.process else None}

    async def start(self) -> None:
        await self.checkers.start()
        await self.zygote.start()
        await self._refill()

    # -- children ------------------------------------------------------------------------

    async def _prepare(self, gpu: bool) -> Slot:
        cgroup = self.cgroups.new() if self.cgroups else None
        procs = self.cgroups.procs_files(cgroup) if cgroup else []
        try:
            try:
                pid, child, fds = await self.zygote.child(gpu, procs)
            except ZygoteGone:
                log.error("the sandbox zygote is gone; starting a new one")
                self.zygote.stop()
                await self.zygote.start()
                pid, child, fds = await self.zygote.child(gpu, procs)
        except BaseException:
            if cgroup:
                await self._remove_cgroup(cgroup)
            raise
        for fd in fds:
            os.set_blocking(fd, False)
        return Slot(pid, child, *fds, cgroup)

    async def _remove_cgroup(self, name: str) -> None:
        await asyncio.get_running_loop().run_in_executor(self._cleanup, self.cgroups.remove,
                                                         name)

    async def _refill(self) -> None:
        if self.ready is None:
            try:
                self.ready = await self._prepare(gpu=False)
            except Exception:  # noqa: BLE001 - the next submission prepares its own
                log.exception("could not prepare a sandbox child ahead of time")

    async def _take_slot(self, gpu: bool) -> Slot:
        if not gpu and self.ready is None and self._refilling is not None:
            await asyncio.shield(self._refilling)  # nearly ready: sooner than a new one
        if not gpu and self.ready is not None:
            slot, self.ready = self.ready, None
        else:
            slot = await self._prepare(gpu)
        if not gpu and (self._refilling is None or self._refilling.done()):
            self._refilling = asyncio.ensure_future(self._refill())
        return slot

    async def _discard(self, slot: Slot) -> None:
        if not self.zygote.exited(slot.child).done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(slot.pid, signal.SIGKILL)  # not reaped yet: still this child's pid
            # Bounded: a zygote that no longer reports exits is stopped next, taking its
            # children with it, and a stop must not wait on it.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.zygote.exited(slot.child)),
                                       DISCARD_WAIT_S)
        self.zygote.forget(slot.child)
        await self._release(slot)

    async def _release(self, slot: Slot) -> None:
        for fd in slot.fds():
            with contextlib.suppress(OSError):
                os.close(fd)
        if slot.cgroup:
            await self._remove_cgroup(slot.cgroup)

    async def close(self) -> None:
        """Stop the child kept waiting and the zygote; give back their cgroups."""
        if self._refilling is not None:
            self._refilling.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._refilling
        slot, self.ready = self.ready, None
        if slot is not None:
            await self._discard(slot)
        self.zygote.stop()
        await self.checkers.close()
        self._cleanup.shutdown(wait=True)

    # -- running a submission ------------------------------------------------------------

    async def execute(self, submission: dict, learner: str, user: str | None = None) -> dict:
        """Exactly one result for every submission, whatever it holds. `learner`: whose it
        is (`connections.learner_key`), for fair admission; `user`: the machine's user who
        sent it, when that is not a bot (its runs at once are capped)."""
        try:
            async with self.admission.turn(learner, user):
                return await self._execute(submission)
        except Busy as exc:
            return busy(str(exc))
        except TooLate:
            return failed("the sandbox was too busy to run this in time; try again", "busy")
        except Exception:  # noqa: BLE001 - a reply, never silence
            log.exception("sandbox run failed")
            return failed("the sandbox failed while running this code", "crash")

    async def _execute(self, submission: dict) -> dict:
        code = submission.get("code")
        if not isinstance(code, str):
            return refused("the submission has no code text")
        if len(code.encode("utf-8", "surrogatepass")) > self.limits.code_max_bytes:
            return refused(f"the code is larger than {self.limits.code_max_bytes // 1024} KB")
        if not (self.memory_limited or self.allow_unbounded_memory):
            return refused("code is not run here: this host gives the sandbox no memory limit "
                           "(see `tutor sandbox doctor`)")
        mode = submission.get("mode") or "run"
        if mode == "vet":
            return await self._vet(submission)
        request = {"code": code, "mode": mode, "device": submission.get("device") or "cpu"}
        checker, salt, author = None, 0, None
        if mode == "check":
            checker = submission.get("checker")
            if checker not in checkers.NAMES:
                return refused(f"no checker named {checker!r}")
            # Data and weights differ per submission: a record of someone's correct run,
            # saved and written back by a loop that never trains, matches nothing.
            salt = _seed()
            if checker == checkers.BEHAVIOUR:  # two runs: the author's, then the learner's
                made = behaviour.requests(submission, code, salt, self.limits.code_max_bytes)
                if isinstance(made, str):
                    return refused(made)
                author, request = made
            else:
                request.update(observer=checkers.OBSERVERS[checker],
                               plan=checkers.load(checker).plan(salt))
        elif mode != "run":
            return refused(f"unknown mode {mode!r}")
        gpu = request["device"] == "cuda" and os.path.exists("/dev/nvidiactl")
        async with self._turn():
            if author is not None:
                author_result, author_detail = await self._run(author, gpu=False)
                if author_result["status"] != OK:
                    return behaviour.author_failed(author_result)
            if gpu:
                async with self.gpu_lock:
                    result, detail = await self._run(request, gpu=True)
            else:
                result, detail = await self._run(request, gpu=False)
        if author is not None:
            detail = {"observations": behaviour.observations(submission, author_detail, detail)}
        if checker is not None:
            result = await self._judged(checker, salt, result, detail)
        return result

    async def _vet(self, submission: dict) -> dict:
        """A deck's behaviour exercise tried before it is stored: its runs one after another
        (the first that ends badly is the answer, its status saying how), then the judge.
        A trial is a lower class than learners' answers: each run takes a turn of its own
        (`Admission`: behind learners' waiting runs, within the trials' share)."""
        if submission.get("checker") != checkers.BEHAVIOUR:
            return refused("only a behaviour exercise is tried")
        made = behaviour.vet_requests(submission, (_seed(), _seed()),
                                      self.limits.code_max_bytes)
        if isinstance(made, str):
            return refused(made)
        details, waited = [], 0.0
        for request in made:
            async with self._turn(trial=True, waited=waited) as waited:
                result, detail = await self._run(request, gpu=False)
            if result["status"] != OK:
                return result
            details.append(detail)
        detail = {"observations": behaviour.vet_observations(submission, details)}
        return await self._judged(checkers.BEHAVIOUR, 0, result, detail)

    @contextlib.asynccontextmanager
    async def _turn(self, trial: bool = False, waited: float = 0.0):
        """A run slot, or TooLate when the request's waits (`waited`: its earlier turns')
        came to more than its client's patience; yields its waits so far."""
        arrived = time.monotonic()
        async with self.admission.slot(trial):
            waited += time.monotonic() - arrived
            if waited > self.limits.reply_margin_s:
                # Its client has stopped waiting: running it now would only delay others.
                raise TooLate
            yield waited

    async def _run(self, request: dict, gpu: bool) -> tuple[dict, dict]:
        loop = asyncio.get_running_loop()
        try:
            slot = await self._take_slot(gpu)
        except Exception as exc:  # noqa: BLE001
            return failed(str(exc), "crash"), {}
        started = time.perf_counter()
        payload = json.dumps(request).encode()
        exited = self.zygote.exited(slot.child)
        overflow, report_overflow = asyncio.Event(), asyncio.Event()
        drains = ((slot.out_r, slot.out, overflow), (slot.err_r, slot.err, overflow),
                  (slot.result_r, slot.report, report_overflow))
        for fd, buffer, event in drains:
            loop.add_reader(fd, slot.drain, fd, buffer, event, self.limits)
        try:
            try:
                done = await self._wait(slot, payload, exited, overflow, report_overflow)
                if not exited.done():  # (the pid could be reused only after a wrap-around)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(slot.pid, signal.SIGKILL)
                wait_status, cpu_s = await asyncio.shield(exited)  # the zygote sets it
            finally:
                for fd, _, _ in drains:
                    loop.remove_reader(fd)
        except asyncio.CancelledError:
            # Its connection closed: the child goes now, and its slot with it.
            await asyncio.shield(self._discard(slot))
            raise
        self.zygote.forget(slot.child)
        elapsed_ms = (time.perf_counter() - started) * 1000
        for fd, buffer, event in drains:  # what is still in the pipes
            slot.drain(fd, buffer, event, self.limits, until_empty=True)
        oom = bool(slot.cgroup) and self.cgroups.oom_killed(slot.cgroup)
        await self._release(slot)
        ending = Ending(wait_status, cpu_s, timed_out=not done,
                        output_overflow=overflow.is_set(),
                        report_overflow=report_overflow.is_set(), oom_killed=oom,
                        report=bytes(slot.report))
        result, detail = decide(ending, self.limits)
        return {**result, **slot.output(self.limits), "elapsed_ms": round(elapsed_ms, 2)}, detail

    async def _wait(self, slot: Slot, payload: bytes, exited: asyncio.Future,
                    *overflows: asyncio.Event) -> bool:
        """Send the submission and wait for the child to end or to overflow; False when
        the wall-clock limit came first."""
        sending = asyncio.ensure_future(send(slot.request_w, payload))
        stops = [asyncio.ensure_future(event.wait()) for event in overflows]
        try:
            finished, _ = await asyncio.wait([exited, *stops], timeout=self.limits.wall_s,
                                             return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sending, *stops):
                task.cancel()
        return bool(finished)

    async def _judged(self, checker: str, salt: int, result: dict, detail: dict) -> dict:
        """A code check's verdict, decided from the child's observations by a checker
        process (bounded: a record that cannot be judged in time costs only this verdict)."""
        observations = detail.get("observations")
        if result["status"] not in (OK, ERROR):
            return result
        if observations is None:
            if result["status"] == OK:
                return {**result, "status": ERROR,
                        "error": "the program ended before the checker could see what it did"}
            return result
        try:
            report = await self.checkers.judge(checker, salt, observations)
        except JudgeFailed as exc:
            return {**result, "status": ERROR, "error": str(exc), "unjudged": "checker"}
        if result["status"] != OK and report.get("passed") is not False:
            error = result.get("error")  # the child's own words: quoted as code
            report = {**report, "status": ERROR, "passed": False,
                      "feedback": [code_span(error) if error else "the program failed"]}
        return {**result, "report": report}


async def _serve(server: SandboxService, serving) -> None:
    """Start `server`, then run `serving(stop)`; SIGTERM sets `stop`."""
    # SIGTERM (docker stop, the client's stop) still gives back children and cgroups. It
    # sets an event rather than cancelling: Python 3.11's wait_for can swallow a
    # cancellation (a stop during start-up was lost and the service ran on).
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await server.start()
        await serving(stop)
    finally:
        await server.close()


async def _until(stop: asyncio.Event, work) -> None:
    """Serve connections until they end or `stop` (their runs are cancelled with them)."""
    service = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait([service, stopped], return_when=asyncio.FIRST_COMPLETED)
    for task in (service, stopped):
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await service  # a service that failed raises here


def _serving(server: SandboxService, args):
    """What the service does once started: serve a socket, stdin, or a fleet's queue."""
    if args.broker:
        from bot.sandbox.broker import FleetTiming, connect
        from bot.sandbox.service.fleet_host import FleetHost

        timing = FleetTiming.for_limits(server.limits.wall_s, server.limits.reply_margin_s,
                                        **args.fleet)

        async def fleet(stop: asyncio.Event) -> None:
            redis = connect(args.broker)
            try:
                await FleetHost(server, redis, args.pool, timing).serve(stop)
            finally:
                await redis.aclose()

        return fleet  # a stop lets the runs in hand finish and answer
    connections = ConnectionLimits(**args.connections)
    if args.listen:
        return lambda stop: _until(stop, serve_socket(server, args.listen, int(args.mode, 8),
                                                      connections))
    return lambda stop: _until(stop, serve_stdio(server))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limits", type=json.loads, default={},
                        help="JSON object overriding fields of protocol.Limits")
    parser.add_argument("--parallel", type=int, default=None,
                        help="children at once (default: by memory, at least the CPUs)")
    parser.add_argument("--checkers", type=json.loads, default={},
                        help="JSON object overriding fields of checker_pool.PoolLimits")
    parser.add_argument("--connections", type=json.loads, default={},
                        help="JSON object overriding fields of connections.ConnectionLimits")
    parser.add_argument("--listen", help="serve on unix:/path instead of stdin/stdout")
    parser.add_argument("--mode", default="660", help="the Unix socket's permissions (octal)")
    parser.add_argument("--pool", choices=["cpu", "cuda"], default="cpu",
                        help="with a broker: the device pool whose jobs this host takes")
    parser.add_argument("--fleet", type=json.loads, default={},
                        help="JSON object overriding fields of broker.FleetTiming")
    parser.add_argument("--allow-unbounded-memory", action="store_true",
                        help="run code even where no cgroup memory limit can be set")
    parser.add_argument("--cgroup-root", type=Path, default=cgroup_limits.ROOT,
                        help="where cgroupfs is mounted (tests point it elsewhere)")
    args = parser.parse_args(argv)
    if args.listen and not args.listen.startswith("unix:"):
        # No TCP: this protocol has no authentication. A fleet across machines goes through
        # Redis, whose users, passwords and TLS guard it.
        parser.error(f"--listen takes unix:/path, not {args.listen!r} (across machines, run "
                     "a fleet: `tutor sandbox serve --broker redis://...`)")
    # The broker's address holds a password: read from the environment (never argv, which
    # every local user can see), and gone from it before any other process starts.
    args.broker = os.environ.pop(BROKER_VARIABLE, None)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    limits = Limits(**args.limits)
    cgroups = Cgroups.create(limits, args.cgroup_root)  # before the zygote: it inherits it
    allow = args.allow_unbounded_memory
    if cgroups is None:
        log.error("no cgroup memory limit (%s): %s", cgroup_limits.last_problem,
                  "code runs anyway, as SANDBOX_ALLOW_UNBOUNDED_MEMORY asks" if allow else
                  "code will not be run (see `tutor sandbox doctor`)")
    if args.broker and cgroups is None and not allow:
        # A host that would only refuse must not take the fleet's jobs from the others.
        parser.exit(2, "no cgroup memory limit here, so this host would run no code: not "
                       "joining the fleet (see `tutor sandbox doctor`)\n")
    server = SandboxService(limits, args.parallel, cgroups, allow, PoolLimits(**args.checkers))
    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(_serve(server, _serving(server, args)))


if __name__ == "__main__":
    main()
