"""A sandbox host in a fleet: one consumer of its device pool's jobs (`broker`).

The host takes a job only when it has a free slot (`broker_functions.take`: the oldest
learner's job, or a deck's trial while it holds fewer than its share and the pool fewer
than a quarter of the fleet's slots), runs it through its `SandboxService` (jail, limits,
verdict: the same as a single host) and answers it (`fleet_answers`). An idle host waits
for Redis to say a job was pushed, and looks anyway every `block_s`. A host never reads
more of a job than `job_max_bytes`: Redis gives it the request only within that bound.

While it runs a job, a host keeps it: each heartbeat renews its claim. A job is taken
over only from a host that stopped reporting (three heartbeats missed), or one that still
reports but has let the job sit past `claim_idle_s` (it failed on that host), and run
once more; a run lost twice is answered as a crash without its request being read. Each
run runs once: a job whose answer is on record (one that Redis brought back, replaying its
log) is answered from the record, and a copy of a run this host is running (sent again
after Redis lost its data) waits for that run's verdict. A Redis that refuses the host's
user is told to the operator and tried again; one that lost its data (the groups, the
functions) is joined anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket

from redis.exceptions import (
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    NoPermissionError,
    RedisError,
    ResponseError,
)

from bot.sandbox import broker_functions as functions
from bot.sandbox.broker import (
    BEATS,
    GROUP,
    HEAD_MAX,
    Clock,
    FleetTiming,
    Keys,
    job_max_bytes,
    live_hosts,
)
from bot.sandbox.broker_link import BrokerLink
from bot.sandbox.protocol import encode, failed
from bot.sandbox.service.fleet_answers import Answers, Job, head, pairs, request_of
from bot.sandbox.service.fleet_doorbell import Doorbell, first_of

log = logging.getLogger("sandbox.fleet")
LOST_TWICE = "the sandbox crashed while running this code"
UNREACHABLE_RETRY_S = 5.0  # the longest wait between tries while Redis cannot be reached


def refused_by_redis(exc: BaseException) -> bool:
    """Whether Redis refused our user (a password, a permission), rather than being away."""
    if isinstance(exc, AuthenticationError | AuthenticationWrongNumberOfArgsError
                  | NoPermissionError):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith(
        ("NOAUTH", "WRONGPASS", "NOPERM"))


def _data_lost(exc: BaseException) -> bool:
    """Redis lost the group or the functions (a restart without its data): join anew."""
    return isinstance(exc, ResponseError) and ("NOGROUP" in str(exc) or functions.missing(exc))


class FleetHost:
    def __init__(self, service, redis, pool: str = "cpu", timing: FleetTiming | None = None,
                 keys: Keys | None = None, name: str | None = None):
        self.service, self.redis, self.pool = service, redis, pool
        self.timing = timing or FleetTiming.for_limits(service.limits.wall_s,
                                                       service.limits.reply_margin_s)
        self.keys = keys or Keys()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.clock = Clock()
        self.running: dict[asyncio.Task, Job] = {}
        self.runs = 0  # runs this host has started in its service
        self.fleet_slots = 0  # the live hosts' slots, as of the last heartbeat
        self._first_copy: dict[str, asyncio.Future] = {}  # rid -> the run's result
        self._next_claim = 0.0
        self._joined_once = False
        inboxes = [self.keys.inbox(pool, trial) for trial in (False, True)]
        self.doorbell = Doorbell(redis, inboxes, self.timing.block_s)
        user = getattr(redis, "connection_pool", None)
        user = user.connection_kwargs.get("username") if user is not None else None
        self.link = BrokerLink(f"sandbox host {self.name} (pool {pool})", user, log)
        self.answers = Answers(redis, self.keys, self.timing, self.clock, self.link)

    # -- the loop ------------------------------------------------------------------------

    async def serve(self, stop: asyncio.Event) -> None:
        """Take and run jobs until `stop`; then finish the runs in hand and leave."""
        beat = asyncio.ensure_future(self._heartbeat(stop))
        listen = asyncio.ensure_future(self.doorbell.listen(stop))
        joined, backoff, waited_out = False, 0.2, False
        try:
            while not stop.is_set():
                if len(self.running) >= self.service.admission.slots:
                    await first_of(stop, *self.running)
                    continue
                try:
                    if not joined:
                        await self._join()
                        joined = True
                    self.doorbell.rung.clear()  # before looking: a push from now on wakes us
                    job = await self._next_job()
                    self.link.ok()
                    backoff = 0.2
                except (RedisError, OSError) as exc:
                    if _data_lost(exc):
                        log.warning("the queue of pool %s is gone (Redis lost its data): "
                                    "joining it anew", self.pool)
                        joined = False
                        continue
                    # Unreachable, or refused (a password, an ACL that lacks a command):
                    # the link says so once (and once a minute), and the host keeps trying,
                    # slowly when refused: it outlives an operator fixing Redis.
                    self.link.failed(exc)
                    await first_of(stop, asyncio.ensure_future(asyncio.sleep(backoff)))
                    most = (self.timing.refused_retry_s if refused_by_redis(exc)
                            else UNREACHABLE_RETRY_S)
                    backoff = min(backoff * 2, most)
                    joined = False
                    continue
                if job is None:
                    waited_out = not await self.doorbell.wait()
                    continue
                if waited_out and not job.trial:
                    self.doorbell.unheard()
                task = asyncio.ensure_future(self._guarded(job))
                self.running[task] = job
                task.add_done_callback(self.running.pop)
        finally:
            if self.running:  # each ends by its own deadline
                await asyncio.gather(*self.running, return_exceptions=True)
            for task in (beat, listen):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, RedisError, OSError):
                    await task
            with contextlib.suppress(RedisError, OSError):
                await self.redis.hdel(self.keys.hosts(self.pool), self.name)
            if self._joined_once:
                log.info("left pool %s as %s after %d runs", self.pool, self.name, self.runs)

    async def _join(self) -> None:
        await self.clock.sync(self.redis)
        await functions.load(self.redis)
        for trial in (False, True):
            try:  # from the start of the stream: jobs may have waited for the first host
                await self.redis.xgroup_create(self.keys.jobs(self.pool, trial), GROUP, id="0",
                                               mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        if not self._joined_once:
            self._joined_once = True
            log.info("joined pool %s as %s with %d slots", self.pool, self.name,
                     self.service.admission.slots)

    # -- taking a job --------------------------------------------------------------------

    def _trial_room(self) -> bool:
        """Whether this host holds fewer trials than its service's share for them."""
        trials = sum(job.trial for job in self.running.values())
        return trials < self.service.admission.trial_slots

    async def _next_job(self) -> Job | None:
        """An orphan first, when it is time to look; else the inbox's oldest job."""
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_claim:
            self._next_claim = loop.time() + self.timing.claim_every_s
            orphan = await self._reclaim()
            if orphan is not None:
                self._next_claim = loop.time()  # there may be more
                return orphan
        room = self._trial_room()
        # Never more than a quarter of the fleet's slots on trials (at least one).
        fleet_share = max(1, (self.fleet_slots or self.service.admission.slots) // 4)
        taken = await functions.call(
            self.redis, "take",
            [self.keys.inbox(self.pool), self.keys.inbox(self.pool, True),
             self.keys.jobs(self.pool), self.keys.jobs(self.pool, True)],
            [GROUP, self.name, job_max_bytes(self.service.limits.code_max_bytes), HEAD_MAX,
             int(room), fleet_share])
        if not taken:
            return None
        stream, entry_id, fields = taken
        return Job(stream, entry_id, pairs(fields), 1,
                   stream == self.keys.jobs(self.pool, True))

    async def _reclaim(self) -> Job | None:
        """A job to take over: one whose host stopped beating (three heartbeats missed), or
        one left idle past `claim_idle_s` by a host that no longer works on it. Trials only
        while this host has room for one."""
        reports = await self.redis.hgetall(self.keys.hosts(self.pool))
        live, _ = live_hosts(reports, self.clock.now_ms(), self.timing.heartbeat_s)
        for trial in (False, True) if self._trial_room() else (False,):
            stream = self.keys.jobs(self.pool, trial)
            job = await self._claim(stream, trial, int(self.timing.claim_idle_s * 1000), "")
            if job is None:
                job = await self._of_the_gone(stream, trial, live)
            if job is not None:
                return job  # counted as a takeover once it is run (`_handle`)
        return None

    async def _of_the_gone(self, stream: str, trial: bool, live: dict) -> Job | None:
        """A job held by a host that has not reported for three beats (a machine that died:
        its runs need not wait for `claim_idle_s`), claimed for this host."""
        beats_ms = int(BEATS * self.timing.heartbeat_s * 1000)
        for consumer in await self.redis.xinfo_consumers(stream, GROUP):
            name = consumer["name"]
            if name == self.name or name in live or not consumer["pending"]:
                continue
            job = await self._claim(stream, trial, beats_ms, name)
            if job is not None:
                return job
        return None

    async def _claim(self, stream: str, trial: bool, idle_ms: int, holder: str) -> Job | None:
        # Its delivery is counted first: past the second, its request is not even read.
        claimed = await functions.call(self.redis, "claim", [stream],
                                       [GROUP, self.name, idle_ms, 2, holder])
        if not claimed:
            return None
        entry_id, deliveries, fields = claimed
        return Job(stream, entry_id, pairs(fields), int(deliveries), trial)

    # -- one job -------------------------------------------------------------------------

    async def _guarded(self, job: Job) -> None:
        try:
            await self._handle(job)
        except Exception:  # noqa: BLE001 - the job stays pending: another host takes it
            log.exception("run %s failed on this host", job.entry_id)

    async def _handle(self, job: Job) -> None:
        """One job: answered from the record, or run (`deliveries` > 1: taken over)."""
        found = head(job)
        if found is None:
            log.error("dropped a malformed job %s", job.entry_id)
            await self.answers.settle(job, None, deadline_ms=self.clock.now_ms() + 10_000)
            return
        rid, bot, deadline_ms = found
        answer = await self.answers.on_record(rid, deadline_ms)
        if answer is not None:  # run already (its acknowledgement lost): not run again
            log.info("run %s (%s) was answered already: its answer sent again",
                     job.entry_id, rid)
            await self.answers.settle(job, (bot, rid, answer), deadline_ms, record=False)
            return
        if job.deliveries > 1:
            with contextlib.suppress(RedisError, OSError):
                await self.redis.incr(self.keys.reclaims(self.pool))
            log.warning("took over run %s from a silent host (delivery %d)", job.entry_id,
                        job.deliveries)
        if job.deliveries > 2:
            request, result = None, failed(LOST_TWICE, "lost")
        else:
            request, result = request_of(job, self.service.limits)
        if request is not None:
            if self.clock.now_ms() + self.service.limits.wall_s * 1000 <= deadline_ms:
                await self._run_once(rid, request, job, bot, deadline_ms)
                return
            result = None  # its bot gives up before this could finish: do not run it
        await self.answers.settle(job, None if result is None else (
            bot, rid, encode(result).decode()), deadline_ms)

    async def _run_once(self, rid: str, request: dict, job: Job, bot: str,
                        deadline_ms: int) -> None:
        """Run it and answer; a copy of a run this host is still running or answering (its
        bot sent it again after Redis lost its data) gets that run's answer instead."""
        first = self._first_copy.get(rid)
        if first is not None:
            log.info("run %s (%s) came again while this host runs it: it gets that verdict",
                     job.entry_id, rid)
            try:
                answer = await asyncio.shield(first)
            except asyncio.CancelledError:
                if not first.cancelled():
                    raise
                return  # the first copy came to no answer here: this one stays pending
            await self.answers.settle(job, (bot, rid, answer), deadline_ms, record=False)
            return
        self.runs += 1
        first = self._first_copy[rid] = asyncio.get_running_loop().create_future()
        try:
            # Per run, not per learner: the bots' admission already holds one run per
            # learner across the fleet.
            answer = encode(await self.service.execute(request, f"run:{rid}")).decode()
            first.set_result(answer)
            await self.answers.settle(job, (bot, rid, answer), deadline_ms)
        finally:
            if not first.done():
                first.cancel()  # copies waiting on it stay pending: another host runs them
            del self._first_copy[rid]

    # -- what others see of this host ----------------------------------------------------

    async def _heartbeat(self, stop: asyncio.Event) -> None:
        hosts = self.keys.hosts(self.pool)
        while not stop.is_set():
            try:
                await self.clock.sync(self.redis)
                now = self.clock.now_ms()
                info = self.service.info()
                await self.redis.hset(hosts, self.name, json.dumps({
                    "seen_ms": now, "in_flight": len(self.running), "runs": self.runs,
                    "slots": self.service.admission.slots, "runs_code": info["runs_code"],
                    "gpu": info["gpu"], "cgroups": info["cgroups"],
                    "memory_limited": info["memory_limited"]}))
                await self._renew()
                await self._look_at_the_fleet(hosts, now)
            except (RedisError, OSError) as exc:
                if self.link.up:  # else the serve loop is saying so already
                    self.link.failed(exc)
            await first_of(stop, asyncio.ensure_future(
                asyncio.sleep(self.timing.heartbeat_s)))

    async def _renew(self) -> None:
        """Keep the jobs this host is running: a live host's work is never taken over."""
        for trial in (False, True):
            ids = [job.entry_id for job in self.running.values() if job.trial == trial]
            if not ids:
                continue
            lost = await functions.call(self.redis, "renew",
                                        [self.keys.jobs(self.pool, trial)],
                                        [GROUP, self.name, *ids])
            for entry_id in lost or ():
                log.warning("run %s was taken over by another host while this one ran it "
                            "(its bot keeps the first reply)", entry_id)

    async def _look_at_the_fleet(self, hosts: str, now: int) -> None:
        """The fleet's slots (for the trials' share); forget hosts gone for good."""
        live, gone = live_hosts(await self.redis.hgetall(hosts), now, self.timing.heartbeat_s)
        self.fleet_slots = sum(int(report.get("slots") or 0) for report in live.values())
        if gone:
            await self.redis.hdel(hosts, *gone)
        for trial in (False, True):
            stream = self.keys.jobs(self.pool, trial)
            with contextlib.suppress(ResponseError):  # no group yet
                for consumer in await self.redis.xinfo_consumers(stream, GROUP):
                    if (consumer["name"] != self.name and consumer["pending"] == 0
                            and consumer["idle"] > self.timing.forget_after_s * 1000):
                        await self.redis.xgroup_delconsumer(stream, GROUP, consumer["name"])
