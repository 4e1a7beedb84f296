"""A sandbox host in a fleet: one consumer of its device pool's job stream (`broker`).

The host takes a job only when it has a free slot, runs it through its `SandboxService`
(jail, limits, verdict: the same as a single host), keeps its answer on record
(`answered:{rid}`), writes the reply to the stream of the bot process that sent it and only
then acknowledges and deletes the job. A job whose host went silent past `claim_idle_s` is
taken over by any host with a free slot and run once more; a run lost twice is answered as
a crash. Each run runs once: a job whose answer is on record (one that Redis brought back,
replaying its log) is answered from the record, and a copy of a run this host is running
(sent again after Redis lost its data) waits for that run's verdict. Every wait is bounded
by the job's own deadline, so a Redis that goes away costs replies late, never a host that
hangs; a Redis that refuses the host's user is told to the operator and tried again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time

from redis.exceptions import (
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    NoPermissionError,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.sandbox.broker import BEATS, GROUP, Clock, FleetTiming, Keys, entry_ms, live_hosts
from bot.sandbox.broker_link import REPEAT_S, BrokerLink
from bot.sandbox.protocol import encode, failed

log = logging.getLogger("sandbox.fleet")
LOST_TWICE = "the sandbox crashed while running this code"
REPLIES_KEPT = 1000  # per bot process; replies are read within milliseconds
UNREACHABLE_RETRY_S = 5.0  # the longest wait between tries while Redis cannot be reached


def refused(exc: BaseException) -> bool:
    """Whether Redis refused our user (a password, a permission), rather than being away."""
    if isinstance(exc, AuthenticationError | AuthenticationWrongNumberOfArgsError
                  | NoPermissionError):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith(
        ("NOAUTH", "WRONGPASS", "NOPERM"))


class FleetHost:
    def __init__(self, service, redis, pool: str = "cpu", timing: FleetTiming | None = None,
                 keys: Keys | None = None, name: str | None = None):
        self.service, self.redis, self.pool = service, redis, pool
        self.timing = timing or FleetTiming.for_limits(service.limits.wall_s,
                                                       service.limits.reply_margin_s)
        self.keys = keys or Keys()
        self.jobs = self.keys.jobs(pool)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.clock = Clock()
        self.running: set[asyncio.Task] = set()
        self.runs = 0  # runs this host has started in its service
        self._first_copy: dict[str, asyncio.Future] = {}  # rid -> the run's result
        self._next_claim = 0.0
        self._joined_once = False
        self._unguarded_said = -REPEAT_S
        user = getattr(redis, "connection_pool", None)
        user = user.connection_kwargs.get("username") if user is not None else None
        self.link = BrokerLink(f"sandbox host {self.name} (pool {pool})", user, log)

    # -- the loop ------------------------------------------------------------------------

    async def serve(self, stop: asyncio.Event) -> None:
        """Take and run jobs until `stop`; then finish the runs in hand and leave."""
        beat = asyncio.ensure_future(self._heartbeat(stop))
        joined, backoff = False, 0.2
        try:
            while not stop.is_set():
                if len(self.running) >= self.service.admission.slots:
                    await self._first_of(stop, *self.running)
                    continue
                try:
                    if not joined:
                        await self._join()
                        joined = True
                    job = await self._next_job()
                    self.link.ok()
                    backoff = 0.2
                except (RedisError, OSError) as exc:
                    if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                        log.warning("the queue of pool %s is gone (Redis lost its data): "
                                    "joining it anew", self.pool)
                        joined = False
                        continue
                    # Unreachable, or refused (a password, an ACL that lacks a command):
                    # the link says so once (and once a minute), and the host keeps trying,
                    # slowly when refused: it outlives an operator fixing Redis.
                    self.link.failed(exc)
                    await self._first_of(stop, asyncio.ensure_future(asyncio.sleep(backoff)))
                    most = self.timing.refused_retry_s if refused(exc) else UNREACHABLE_RETRY_S
                    backoff = min(backoff * 2, most)
                    joined = False
                    continue
                if job is not None:
                    task = asyncio.ensure_future(self._guarded(*job))
                    self.running.add(task)
                    task.add_done_callback(self.running.discard)
        finally:
            if self.running:  # each ends by its own deadline
                await asyncio.gather(*self.running, return_exceptions=True)
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError, RedisError, OSError):
                await beat
            with contextlib.suppress(RedisError, OSError):
                await self.redis.hdel(self.keys.hosts(self.pool), self.name)
            if self._joined_once:
                log.info("left pool %s as %s after %d runs", self.pool, self.name, self.runs)

    @staticmethod
    async def _first_of(stop: asyncio.Event, *tasks) -> None:
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()

    async def _join(self) -> None:
        await self.clock.sync(self.redis)
        try:  # from the start of the stream: jobs may have waited for the first host
            await self.redis.xgroup_create(self.jobs, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        if not self._joined_once:
            self._joined_once = True
            log.info("joined pool %s as %s with %d slots", self.pool, self.name,
                     self.service.admission.slots)

    async def _next_job(self) -> tuple[str, dict, int] | None:
        """(entry id, fields, deliveries): an orphan first, when it is time to look."""
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_claim:
            self._next_claim = loop.time() + self.timing.claim_every_s
            orphan = await self._reclaim()
            if orphan is not None:
                self._next_claim = loop.time()  # there may be more
                return orphan
        reply = await self.redis.xreadgroup(GROUP, self.name, {self.jobs: ">"}, count=1,
                                            block=int(self.timing.block_s * 1000))
        for _, entries in reply or ():
            for entry_id, fields in entries:
                return entry_id, fields, 1
        return None

    async def _reclaim(self) -> tuple[str, dict, int] | None:
        """A job to take over: one whose host stopped beating (three heartbeats missed), or
        one silent past the longest request's time whatever its host says."""
        _, entries, deleted = await self.redis.xautoclaim(
            self.jobs, GROUP, self.name, int(self.timing.claim_idle_s * 1000), "0-0", count=1)
        if deleted:  # trimmed while their host was silent: nothing to run
            await self.redis.xack(self.jobs, GROUP, *deleted)
        for entry_id, fields in entries or await self._of_the_gone():
            # counted as a takeover once it is run (`_handle`)
            pending = await self.redis.xpending_range(self.jobs, GROUP, entry_id, entry_id, 1)
            deliveries = pending[0]["times_delivered"] if pending else 2
            return entry_id, fields, max(deliveries, 2)
        return None

    async def _of_the_gone(self) -> list[tuple[str, dict]]:
        """A job held by a host that has not reported for three beats (a machine that died:
        its runs need not wait for `claim_idle_s`), claimed for this host."""
        beats_ms = int(BEATS * self.timing.heartbeat_s * 1000)
        live, _ = live_hosts(await self.redis.hgetall(self.keys.hosts(self.pool)),
                             self.clock.now_ms(), self.timing.heartbeat_s)
        for consumer in await self.redis.xinfo_consumers(self.jobs, GROUP):
            name = consumer["name"]
            if name == self.name or name in live or not consumer["pending"]:
                continue
            for entry in await self.redis.xpending_range(self.jobs, GROUP, "-", "+", 1,
                                                         consumername=name, idle=beats_ms):
                claimed = await self.redis.xclaim(self.jobs, GROUP, self.name, beats_ms,
                                                  [entry["message_id"]])
                if claimed:
                    return claimed
        return []

    # -- one job -------------------------------------------------------------------------

    async def _guarded(self, entry_id: str, fields: dict, deliveries: int) -> None:
        try:
            await self._handle(entry_id, fields, deliveries)
        except Exception:  # noqa: BLE001 - the job stays pending: another host takes it
            log.exception("run %s failed on this host", entry_id)

    async def _handle(self, entry_id: str, fields: dict, deliveries: int) -> None:
        """One job: answered from the record, or run (`deliveries` > 1: taken over)."""
        try:
            rid, bot = fields["rid"], fields["reply_to"]
            deadline_ms = entry_ms(entry_id) + int(fields["patience_ms"])
            request = json.loads(fields["request"])
            if not isinstance(request, dict):
                raise ValueError("the request is not an object")
        except (KeyError, TypeError, ValueError):
            log.error("dropped a malformed job %s", entry_id)
            await self._settle(entry_id, None, deadline_ms=self.clock.now_ms() + 10_000)
            return
        answer = await self._on_record(rid, deadline_ms)
        if answer is not None:  # run already (its acknowledgement lost): not run again
            log.info("run %s (%s) was answered already: its answer sent again", entry_id, rid)
            await self._settle(entry_id, (bot, rid, answer), deadline_ms, record=False)
            return
        if deliveries > 1:
            with contextlib.suppress(RedisError, OSError):
                await self.redis.incr(self.keys.reclaims(self.pool))
            log.warning("took over run %s from a silent host (delivery %d)", entry_id,
                        deliveries)
        if deliveries > 2:
            result = failed(LOST_TWICE, "lost")
        elif self.clock.now_ms() + self.service.limits.wall_s * 1000 > deadline_ms:
            result = None  # its bot gives up before this could finish: do not run it
        else:
            await self._run_once(rid, request, entry_id, bot, deadline_ms)
            return
        await self._settle(entry_id, None if result is None else (
            bot, rid, encode(result).decode()), deadline_ms)

    async def _run_once(self, rid: str, request: dict, entry_id: str, bot: str,
                        deadline_ms: int) -> None:
        """Run it and answer; a copy of a run this host is still running or answering (its
        bot sent it again after Redis lost its data) gets that run's answer instead."""
        first = self._first_copy.get(rid)
        if first is not None:
            log.info("run %s (%s) came again while this host runs it: it gets that verdict",
                     entry_id, rid)
            try:
                answer = await asyncio.shield(first)
            except asyncio.CancelledError:
                if not first.cancelled():
                    raise
                return  # the first copy came to no answer here: this one stays pending
            await self._settle(entry_id, (bot, rid, answer), deadline_ms, record=False)
            return
        self.runs += 1
        first = self._first_copy[rid] = asyncio.get_running_loop().create_future()
        try:
            # Per run, not per learner: the bots' admission already holds one run per
            # learner across the fleet.
            answer = encode(await self.service.execute(request, f"run:{rid}")).decode()
            first.set_result(answer)
            await self._settle(entry_id, (bot, rid, answer), deadline_ms)
        finally:
            if not first.done():
                first.cancel()  # copies waiting on it stay pending: another host runs them
            del self._first_copy[rid]

    async def _on_record(self, rid: str, deadline_ms: int) -> str | None:
        """The run's answer, when some host has answered it already."""
        while True:
            try:
                return await self.redis.get(self.keys.answered(rid))
            except NoPermissionError as exc:  # an ACL file older than `answered:*`
                self._unguarded(exc)
                return None
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                self.link.failed(exc)
                if self.clock.now_ms() > deadline_ms:
                    return None  # too late to run it anyway
                await asyncio.sleep(0.5)

    def _unguarded(self, exc: BaseException) -> None:
        if time.monotonic() - self._unguarded_said >= REPEAT_S:
            self._unguarded_said = time.monotonic()
            log.error("Redis denies this host its answers on record (%s): runs are answered "
                      "but not guarded against a replayed log; write the ACL file anew with "
                      "`tutor sandbox acl` and restart Redis", str(exc).splitlines()[0])

    async def _settle(self, entry_id: str, reply: tuple[str, str, str] | None,
                      deadline_ms: int, record: bool = True) -> None:
        """Keep the answer on record, write the reply, acknowledge and delete the job: four
        plain commands in that order, never a MULTI (a Redis that drops transactions from
        the log it replays, redis#14541, brings each one back): whichever of them a crash
        or a replay keeps, the run is never run again. Keep trying while the reply can
        still be of use."""
        while True:
            try:
                pipe = self.redis.pipeline(transaction=False)
                if reply is not None:
                    bot, rid, answer = reply
                    if record:  # until no bot waits for it (Redis's clock: every host's)
                        keep_ms = deadline_ms - self.clock.now_ms()
                        pipe.set(self.keys.answered(rid), answer, nx=True,
                                 px=max(keep_ms, 0) + int(self.timing.claim_idle_s * 1000))
                    replies = self.keys.replies(bot)
                    pipe.xadd(replies, {"rid": rid, "result": answer},
                              maxlen=REPLIES_KEPT, approximate=True)
                    pipe.pexpire(replies, int(self.timing.reply_ttl_s * 1000))
                pipe.xack(self.jobs, GROUP, entry_id)
                pipe.xdel(self.jobs, entry_id)
                for outcome in await pipe.execute(raise_on_error=False):
                    if isinstance(outcome, NoPermissionError):
                        self._unguarded(outcome)
                    # NOGROUP: the queue went with a Redis restart; the reply still went.
                    elif isinstance(outcome, Exception) and "NOGROUP" not in str(outcome):
                        log.error("answering run %s: %s", entry_id, outcome)
                self.link.ok()
                return
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                self.link.failed(exc)
                if self.clock.now_ms() > deadline_ms:
                    log.error("could not deliver the reply to run %s (%s)", entry_id, exc)
                    return
                await asyncio.sleep(0.5)

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
                await self._forget_the_gone(hosts, now)
            except (RedisError, OSError) as exc:
                if self.link.up:  # else the serve loop is saying so already
                    self.link.failed(exc)
            await self._first_of(stop, asyncio.ensure_future(
                asyncio.sleep(self.timing.heartbeat_s)))

    async def _forget_the_gone(self, hosts: str, now: int) -> None:
        _, gone = live_hosts(await self.redis.hgetall(hosts), now, self.timing.heartbeat_s)
        if gone:
            await self.redis.hdel(hosts, *gone)
        with contextlib.suppress(ResponseError):  # no group yet
            for consumer in await self.redis.xinfo_consumers(self.jobs, GROUP):
                if (consumer["name"] != self.name and consumer["pending"] == 0
                        and consumer["idle"] > self.timing.forget_after_s * 1000):
                    await self.redis.xgroup_delconsumer(self.jobs, GROUP, consumer["name"])
