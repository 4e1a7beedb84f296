"""How a fleet host answers a job: from the record when some host answered it already, and
otherwise by keeping its answer on record, writing the reply and only then acknowledging
and deleting the job (`FleetHost` runs the jobs; this is what it writes for each).

Every wait here is bounded by the job's own deadline, so a Redis that goes away costs
replies late, never a host that hangs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.sandbox.broker import GROUP, HEAD_MAX, Clock, FleetTiming, Keys, job_max_bytes
from bot.sandbox.broker_link import REPEAT_S, BrokerLink
from bot.sandbox.protocol import failed, refused

log = logging.getLogger("sandbox.fleet")
REPLIES_KEPT = 1000  # per bot process; replies are read within milliseconds
UNREADABLE = "a sandbox host could not read this run"


@dataclass
class Job:
    """One job in a host's hands: the stream entry `take` or `claim` delivered."""

    stream: str
    entry_id: str
    fields: dict[str, str]
    deliveries: int  # 1: taken from the inbox; more: taken over from a silent host
    trial: bool  # a deck's trial (its own stream, within the trials' share)


def head(job: Job) -> tuple[str, str, int] | None:
    """(request id, the bot to reply to, the deadline on Redis's clock), or None when the
    job's head is not one a bot writes."""
    text = job.fields.get("head", "")
    try:
        if len(text) > HEAD_MAX:
            raise ValueError("too long")
        fields = json.loads(text)
        rid, bot, deadline_ms = fields["rid"], fields["reply_to"], fields["deadline_ms"]
        if not (isinstance(rid, str) and isinstance(bot, str) and type(deadline_ms) is int):
            raise TypeError("not a head")
    except (KeyError, TypeError, ValueError, RecursionError):
        return None
    return rid, bot, deadline_ms


class Answers:
    def __init__(self, redis, keys: Keys, timing: FleetTiming, clock: Clock,
                 link: BrokerLink):
        self.redis, self.keys, self.timing, self.clock, self.link = (
            redis, keys, timing, clock, link)
        self._unguarded_said = -REPEAT_S

    async def on_record(self, rid: str, deadline_ms: int) -> str | None:
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

    async def settle(self, job: Job, reply: tuple[str, str, str] | None, deadline_ms: int,
                     record: bool = True) -> None:
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
                pipe.xack(job.stream, GROUP, job.entry_id)
                pipe.xdel(job.stream, job.entry_id)
                for outcome in await pipe.execute(raise_on_error=False):
                    if isinstance(outcome, NoPermissionError):
                        self._unguarded(outcome)
                    # NOGROUP: the queue went with a Redis restart; the reply still went.
                    elif isinstance(outcome, Exception) and "NOGROUP" not in str(outcome):
                        log.error("answering run %s: %s", job.entry_id, outcome)
                self.link.ok()
                return
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                self.link.failed(exc)
                if self.clock.now_ms() > deadline_ms:
                    log.error("could not deliver the reply to run %s (%s)", job.entry_id, exc)
                    return
                await asyncio.sleep(0.5)


def pairs(flat: list) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


def request_of(job: Job, limits) -> tuple[dict | None, dict | None]:
    """(the job's request, None); or (None, the result that answers a job with no request
    a host may read: larger than `job_max_bytes`, or not a JSON object)."""
    text = job.fields.get("request")
    if text is None:
        size, most = job.fields.get("size", "?"), job_max_bytes(limits.code_max_bytes)
        return None, refused(f"the job is {size} bytes: a sandbox host reads at most {most}")
    try:
        request = json.loads(text)
    except (ValueError, RecursionError):
        request = None
    if not isinstance(request, dict):
        return None, failed(UNREADABLE, "unreadable")
    return request, None
