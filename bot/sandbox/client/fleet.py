"""The bot's side of a sandbox fleet: runs go through Redis to whichever host is free.

Admission is one atomic function in Redis (`broker_functions`), so a learner has one run
in flight and a few a minute whichever bot process (shard) they click in, and a pool's
queue is bounded for the whole fleet; a deck's trial (`mode: vet`) waits in a queue and
an inbox of its own, which hosts take from only within the trials' share of their slots.
Replies come back on this process's own stream; the first reply for a run is kept. Every
run is answered by its deadline: a Redis that restarted and lost the queue gets the runs
this process was waiting for once more; a Redis that cannot be reached refuses new runs at
once with a message the learner can act on, and so does a pool with no live host (none
has beaten for three heartbeats), whose waiting runs are answered then too. A Redis that
is away (or refuses our user) when the bot starts is tried again and again, in the
background, until it answers (`BrokerLink` tells the operator).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import logging
import secrets
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from redis.exceptions import RedisError, ResponseError

from bot.sandbox import broker_functions as functions
from bot.sandbox.broker import (
    BEATS,
    HEAD_MAX,
    POOLS,
    PREFIX,
    Clock,
    FleetTiming,
    Keys,
    connect,
    is_broker,
    job_element,
    job_max_bytes,
    job_request,
    redacted,
)
from bot.sandbox.broker_link import BrokerLink, problem
from bot.sandbox.client.client import SandboxBusy, SandboxClient
from bot.sandbox.client.fleet_hosts import HostWatch
from bot.sandbox.protocol import (
    Limits,
    RunResult,
    ServiceInfo,
    busy,
    decode,
    failed,
    refused,
)

log = logging.getLogger(__name__)
UNREACHABLE = "The code runner cannot be reached right now; try again in a minute."
NO_HOST = "No code runner is up right now; try again in a minute."
HOSTS_FRESH_S = 5.0  # how long a look at the hosts' load is reused


class BrokerUnavailable(Exception):
    """Redis could not be reached, or refused our user (`start(keep_trying=False)`); the
    message is one line for whoever runs the command."""


def client_for(address: str | None, **options):
    """The sandbox client an address asks for: a fleet behind Redis (`redis://`,
    `rediss://`), a shared service (`unix:/path`), or a service of our own (None)."""
    if is_broker(address):
        allowed = {"limits", "max_queue", "runs_per_minute", "timing", "prefix"}
        return FleetClient(address, **{k: v for k, v in options.items() if k in allowed})
    return SandboxClient(address=address, **options)


@dataclass
class _Run:
    rid: str
    pool: str
    learner: str  # the admission key: the learner's, or the run's own for a tool's run
    request: str  # as JSON (`broker.job_request`)
    future: asyncio.Future
    deadline: float  # on the loop's clock
    trial: bool = False  # a deck's trial: its own queue and inbox
    sent_again: bool = False


@dataclass
class FleetStats:
    """What the fleet looks like from here, for /metrics and /healthz. When Redis does not
    answer: `up` false with the problem, no runs and no hosts, the last reclaims seen."""

    queue: dict[str, int] = field(default_factory=dict)  # per pool: waiting or running
    in_flight: dict[tuple[str, str], int] = field(default_factory=dict)  # (pool, host)
    reclaims: dict[str, int] = field(default_factory=dict)  # per pool, since Redis began
    live: dict[str, int] = field(default_factory=dict)  # per pool: hosts heard from lately
    # per pool: no host has reported for three beats (its runs are refused)
    hostless: dict[str, bool] = field(default_factory=dict)
    up: bool = True
    problem: str | None = None


class FleetClient:
    service_pid = None  # no process of our own

    def __init__(self, address: str, *, limits: Limits | None = None, max_queue: int = 64,
                 runs_per_minute: int = 6, timing: FleetTiming | None = None,
                 prefix: str = PREFIX):
        self.address = address
        self.limits = limits or Limits()
        self.timing = timing or FleetTiming.for_limits(self.limits.wall_s,
                                                       self.limits.reply_margin_s)
        self.max_queue = max_queue
        self.runs_per_minute = runs_per_minute
        self.keys = Keys(prefix)
        self.bot = secrets.token_hex(8)
        self.replies = self.keys.replies(self.bot)
        self.refusals: Counter[str] = Counter()
        self.clock = Clock()
        self.redis = None
        self._runs: dict[str, _Run] = {}
        self._serial = itertools.count(1)
        self._reader: asyncio.Task | None = None
        self._stopping = False
        self._epoch: str | None = None
        self._looked = 0.0  # when `watch` last looked (the loop's clock)
        self.watch = HostWatch(self.keys, self.timing.heartbeat_s, self.clock)
        self._reclaims: dict[str, int] = {}  # the last count seen (a counter never drops)
        self.link = BrokerLink(f"sandbox broker {redacted(address)}",
                               urlsplit(address).username, log)

    # -- connection ----------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """Whether Redis answered us lately: code cards are served only while it does."""
        return self.link.up

    async def start(self, keep_trying: bool = True) -> ServiceInfo:
        """Reach Redis as the bot's user and return what the live hosts say of themselves.
        A Redis that is away or refuses us is tried again in the background until it
        answers (runs are refused meanwhile); `keep_trying=False` raises BrokerUnavailable
        instead (a command that runs once)."""
        self._stopping = False
        self.redis = connect(self.address)
        try:
            await self._reach()
        except (RedisError, OSError) as exc:
            if not keep_trying:  # its caller says it, once
                with contextlib.suppress(RedisError, OSError):
                    await self.redis.aclose()
                raise BrokerUnavailable(problem(exc, self.link.user)) from None
            self.link.failed(exc)
        self._reader = asyncio.create_task(self._read_replies(lost=not self.link.up))
        return await self.info()

    async def _reach(self) -> None:
        await self.clock.sync(self.redis)
        epoch = await self._current_epoch()
        if self._epoch is None:
            self._epoch = epoch
        self.link.ok()

    async def stop(self) -> None:
        self._stopping = True
        if self._reader is not None:
            self._reader.cancel()
            # Bounded: a cancellation that lands inside the Redis client can come back as a
            # connection error, which the reader survives (it then sees `_stopping`).
            await asyncio.wait([self._reader], timeout=self.timing.block_s + 5)
        for run in self._runs.values():
            if not run.future.done():
                run.future.set_result(failed("the bot is shutting down", "shutdown"))
        if self.redis is not None:
            with contextlib.suppress(RedisError, OSError, TimeoutError):
                await asyncio.wait_for(self.redis.aclose(), 5)

    async def _current_epoch(self) -> str:
        """The epoch mark; the first process to find none (a new or emptied Redis) sets it."""
        epoch = await self.redis.get(self.keys.epoch)
        if epoch is None:
            await self.redis.set(self.keys.epoch, secrets.token_hex(8), nx=True)
            epoch = await self.redis.get(self.keys.epoch)
        return epoch

    async def hosts(self, fresh: bool = False) -> dict[str, dict[str, dict]]:
        """{pool: {host: its last report}} for the hosts heard from lately (a look at most
        HOSTS_FRESH_S old, unless `fresh`)."""
        loop = asyncio.get_running_loop()
        if fresh or loop.time() - self._looked >= HOSTS_FRESH_S:
            await self.watch.look(self.redis)
            self._looked = loop.time()
        return self.watch.live

    async def info(self) -> ServiceInfo:
        """Code runs when any live host runs it, or when no host has reported yet (they
        start beside the bots and take the queue when they come), or Redis is away."""
        try:
            hosts = await self.hosts() if self.link.up else {}
        except (RedisError, OSError) as exc:
            self.link.failed(exc)
            hosts = {}
        reports = [r for pool in hosts.values() for r in pool.values()]
        runs_code = any(r.get("runs_code") for r in reports) if reports else True
        limited = [r.get("memory_limited") for r in reports]
        return ServiceInfo(runs_code=runs_code,
                           memory_limited=all(limited) if limited else None,
                           gpu=any(r.get("gpu") for r in reports),
                           slots=sum(int(r.get("slots") or 0) for r in reports) or None)

    async def stats(self) -> FleetStats:
        """The fleet's numbers now; never raises (Redis away: `up` false, zeros)."""
        stats = FleetStats()
        try:
            now = self.clock.now_ms()
            for pool in POOLS:  # admitted and not yet answered, trials too
                stats.queue[pool] = sum([await self.redis.zcount(
                    self.keys.queue(pool, trial), f"({now}", "+inf") for trial in (False, True)])
                stats.reclaims[pool] = int(await self.redis.get(self.keys.reclaims(pool))
                                           or 0)
            for pool, reports in (await self.hosts(fresh=True)).items():
                stats.live[pool] = len(reports)
                stats.hostless[pool] = self.watch.hostless(pool)
                for name, report in reports.items():
                    stats.in_flight[(pool, name)] = int(report.get("in_flight") or 0)
        except (RedisError, OSError) as exc:
            self.link.failed(exc)
            return FleetStats(queue=dict.fromkeys(POOLS, 0), live=dict.fromkeys(POOLS, 0),
                              reclaims=dict(self._reclaims), up=False,
                              problem=self.link.problem)
        self._reclaims = dict(stats.reclaims)
        stats.problem = self.link.problem
        stats.up = self.link.up
        return stats

    # -- submissions ---------------------------------------------------------------------

    async def run(self, code: str, *, learner: str | None = None, mode: str = "run",
                  checker: str | None = None, device: str = "cpu",
                  behaviour: dict | None = None) -> RunResult:
        """Run code on the fleet; raise SandboxBusy when not admitted (or Redis is away)."""
        loop = asyncio.get_running_loop()
        rid = f"{self.bot}-{next(self._serial)}"
        if not self.link.up:  # refused at once: the reader tries Redis again meanwhile
            raise self._refuse("unreachable", UNREACHABLE)
        try:
            pool = await self._pool(device)
            key = _learner_key(learner) if learner is not None else rid
            submission = {"code": code, "mode": mode, "checker": checker, "device": device}
            if behaviour is not None:
                submission["behaviour"] = behaviour
            request = job_request(submission)
            if len(request.encode()) + HEAD_MAX > job_max_bytes(self.limits.code_max_bytes):
                return RunResult.from_wire(refused("the code and its exercise are too large "
                                                   "to send to the sandbox"))
            run = _Run(rid, pool, key, request, loop.create_future(),
                       loop.time() + self.timing.patience_s, trial=mode == "vet")
            self._runs[rid] = run  # before it is sent: its reply may come back first
            # A deck's trial: one at a time per server, but not a learner's runs per minute
            # (its cards are tried one after another; the engine rates uploads per server).
            answered = await self._enter(run, "anonymous" if learner is None
                                         else "trial" if mode == "vet" else "learner")
            if answered is not None and not run.future.done():  # (or answered as hostless)
                run.future.set_result(answered)
        except (RedisError, OSError) as exc:
            self._runs.pop(rid, None)
            self.link.failed(exc)
            raise self._refuse("unreachable", UNREACHABLE) from None
        except SandboxBusy:
            self._runs.pop(rid, None)
            raise
        try:
            try:
                reply = await asyncio.wait_for(asyncio.shield(run.future),
                                               run.deadline - loop.time())
            except TimeoutError:
                log.error("no sandbox host answered run %s in %.0f s", rid,
                          self.timing.patience_s)
                reply = failed(f"the sandbox did not answer within "
                               f"{self.timing.patience_s:.0f} s", "timeout")
        finally:
            del self._runs[rid]
            await self._let_go(run)
        result = RunResult.from_wire(reply)
        if result.busy:
            raise self._refuse("busy", result.stderr or "The code runner is busy; try again.")
        return result

    async def _pool(self, device: str) -> str:
        """The pool to send a run to; SandboxBusy ("no_host") when none of its hosts has
        reported for three beats (a host that just joined is looked for first)."""
        hosts = await self.hosts()
        pool = "cuda" if device == "cuda" and hosts["cuda"] else "cpu"
        if not hosts[pool] and not (await self.hosts(fresh=True))[pool] \
                and self.watch.hostless(pool):
            raise self._refuse("no_host", NO_HOST)
        return pool

    async def _enter(self, run: _Run, mode: str) -> dict | None:
        """Admit the run (raising SandboxBusy) and push it on its pool's inbox; or its reply
        when it cannot be sent (no host for three beats, and none loaded the functions)."""
        remaining_ms = max(1, int((run.deadline - asyncio.get_running_loop().time()) * 1000))
        # ("ok", Redis's clock now) or (why not, how long to wait)
        verdict, number = await self._admit(run, [
            run.rid, remaining_ms, self.runs_per_minute, self.max_queue, mode])
        if verdict == "no_host":
            return self._no_host()
        if verdict == "learner":
            raise self._refuse("learner", "Your previous code is still running; wait for "
                                          "its verdict.")
        if verdict == "rate":
            raise self._refuse("rate", f"That's {self.runs_per_minute} runs this minute; "
                                       f"try again in {max(1, int(number) // 1000)} s.")
        if verdict == "full":
            raise self._refuse("full", "The code runner is busy right now; try again in a "
                                       "minute.")
        try:  # the hosts own the jobs once pushed: a bot never trims or removes them
            await self.redis.rpush(self.keys.inbox(run.pool, run.trial), job_element(
                run.rid, self.bot, run.learner, int(number) + remaining_ms, run.request))
        except BaseException:
            await self._let_go(run)
            raise
        return None

    async def _admit(self, run: _Run, args: list) -> list:
        """The admission function's verdict. A Redis without the fleet's functions (new, or
        restarted without its data) gets them from the first host that joins: until then
        the run waits, and is answered as having no host ("no_host") once the pool is
        hostless."""
        keys = [self.keys.learner(run.learner), self.keys.rate(run.learner),
                self.keys.queue(run.pool, run.trial)]
        said = False
        while True:
            try:
                return await functions.call(self.redis, "admit", keys, args)
            except ResponseError as exc:
                if not functions.missing(exc):
                    raise
            if not said:  # (the hosts' absence is what the operator is told of)
                said = True
                log.info("the sandbox broker has no fleet functions %s yet: waiting for a "
                         "host to load them", functions.LIBRARY)
            if not (await self.hosts(fresh=True))[run.pool] and self.watch.hostless(run.pool):
                return ["no_host", 0]
            await asyncio.sleep(min(1.0, self.timing.heartbeat_s / 2))

    async def _let_go(self, run: _Run) -> None:
        """The learner may send another run, and the queue place is free (best effort: the
        keys expire by the run's deadline anyway)."""
        with contextlib.suppress(RedisError, OSError):
            await functions.call(self.redis, "release", [
                self.keys.learner(run.learner), self.keys.queue(run.pool, run.trial)],
                [run.rid])

    def _refuse(self, reason: str, message: str) -> SandboxBusy:
        self.refusals[reason] += 1
        return SandboxBusy(message, reason=reason)

    # -- replies -------------------------------------------------------------------------

    async def _read_replies(self, lost: bool = False) -> None:
        last, backoff, looked = "0-0", 0.2, 0.0
        loop = asyncio.get_running_loop()
        while not self._stopping:
            try:
                # Whether Redis lost the queue: after a lost connection, and while runs
                # wait, once a blocking read (a restart can also go unseen: the client
                # reconnects by itself). Runs whose pool lost its last host are answered.
                if lost or (self._runs and loop.time() - looked >= self.timing.block_s):
                    last = await self._after_a_loss(last)
                    await self._answer_hostless()
                    lost, backoff, looked = False, 0.2, loop.time()
                streams = await self.redis.xread({self.replies: last}, count=100,
                                                 block=int(self.timing.block_s * 1000))
            except (RedisError, OSError) as exc:
                self.link.failed(exc)
                lost = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            self.link.ok()  # (another call may have seen Redis fail meanwhile)
            for _, entries in streams or ():
                for entry_id, fields in entries:
                    last = entry_id
                    self._deliver(fields)

    def _deliver(self, fields: dict) -> None:
        run = self._runs.get(fields.get("rid"))
        if run is None or run.future.done():
            return  # answered already (a host that was slow, not dead), or given up
        try:
            reply = decode(fields.get("result", "").encode())
        except ValueError:
            reply = failed("a sandbox host sent a reply this bot cannot read", "unreadable")
        run.future.set_result(reply)

    async def _answer_hostless(self) -> None:
        """Runs waiting in a pool whose hosts have not reported for three beats are
        answered now, not at their deadline: nothing would run them (a host that comes back
        later may, and its reply is dropped)."""
        waiting = {run.pool for run in self._runs.values() if not run.future.done()}
        if not waiting:
            return
        hosts = await self.hosts()
        if any(not hosts[pool] for pool in waiting):
            hosts = await self.hosts(fresh=True)
        for run in self._runs.values():
            if not run.future.done() and not hosts[run.pool] and self.watch.hostless(run.pool):
                run.future.set_result(self._no_host())

    def _no_host(self) -> dict:
        return failed(f"no sandbox host has reported for "
                      f"{BEATS * self.timing.heartbeat_s:.0f} s", "no_host")

    async def _after_a_loss(self, last: str) -> str:
        """Whether Redis lost its data (a restart without persistence): then the runs this
        process waits for are sent once more, and the reply stream starts anew."""
        epoch = await self._current_epoch()
        self.link.ok()
        if self._epoch is None:  # Redis answers for the first time since we started
            await self._reach()
            return last
        if epoch == self._epoch:
            return last
        log.error("the sandbox broker lost its queue; sending %d waiting runs again",
                  len(self._runs))
        self._epoch = epoch
        self.watch.data_lost()
        await self.clock.sync(self.redis)
        for run in list(self._runs.values()):
            if run.future.done():
                continue
            if run.sent_again:
                run.future.set_result(failed("the sandbox lost this run twice; try again",
                                             "lost"))
                continue
            run.sent_again = True
            try:
                answered = await self._enter(run, "again")
            except SandboxBusy as exc:
                answered = busy(str(exc))
            if answered is not None and not run.future.done():
                run.future.set_result(answered)
        return "0-0"


def _learner_key(learner: str) -> str:
    """Short and plain whatever the caller's key looks like."""
    if len(learner) <= 100 and learner.isprintable():
        return learner
    return "sha256:" + hashlib.sha256(learner.encode("utf-8", "replace")).hexdigest()
