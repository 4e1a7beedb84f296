"""The sandbox fleet's meeting place: Redis, shared by every bot process and sandbox host.

Bot processes (`client.fleet`) admit a run and push it on the inbox of a device pool;
sandbox hosts (`service.fleet_host`) take jobs from their pool's inbox into a stream of
their own, read as consumers of one group, run each job and write the reply to the stream
of the bot process that sent it. Redis runs only the fleet's own functions
(`broker_functions`). What lives where, under one prefix (`tutor:sandbox:` by default):

    inbox:{pool}         list, one job a run, pushed by the bots and taken by the hosts
    inbox:{pool}:trials  the same for deck trials (`mode: vet`), taken within their share
    jobs:{pool}          stream of the jobs the hosts have taken; group `hosts`; an entry is
    jobs:{pool}:trials   deleted once answered, so its length is the runs in hand
    replies:{bot}        stream per bot process, trimmed and expiring
    admit:learner:{key}  the learner's one run in flight (its request id), expiring
    admit:rate:{key}     the learner's runs this minute (sorted set), expiring
    admit:queue:{pool}   runs admitted and not yet answered (sorted set by deadline); deck
                         trials wait in `admit:queue:{pool}:trials`, bounded apart
    admit:epoch          a random mark: gone after a restart that lost the queue
    hosts:{pool}         hash: each live host's load, refreshed by the host
    hosts:reclaims:{pool} runs taken over from a host that stopped answering
    answered:{rid}       a run's reply, kept by the host that answered it until the run's
                         deadline has passed: a job that comes back (a log replayed without
                         its acknowledgement) is answered from it, never run again

The two users (`acl_rules`) each get only their part: the bot admits runs, pushes jobs
(never reads, removes or trims them) and reads replies and hosts; a host takes, claims
and acknowledges jobs, writes replies and its answers, and loads the functions. Neither
may run a script of its own. The jobs carry no secret.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from bot.sandbox.behaviour import MOST_RUNS

POOLS = ("cpu", "cuda")
GROUP = "hosts"
PREFIX = "tutor:sandbox:"
BOT_USER, HOST_USER = "tutor-bot", "tutor-sandbox"
MAX_CONNECTIONS = 64  # per process: a blocking read each, and a few commands at once
BEATS = 3  # heartbeats a host may miss before it is gone (its runs are taken over)


def is_broker(address: str | None) -> bool:
    return bool(address) and address.startswith(("redis://", "rediss://"))


@dataclass(frozen=True)
class Keys:
    prefix: str = PREFIX

    def inbox(self, pool: str, trial: bool = False) -> str:
        return f"{self.prefix}inbox:{pool}" + (":trials" if trial else "")

    def jobs(self, pool: str, trial: bool = False) -> str:
        return f"{self.prefix}jobs:{pool}" + (":trials" if trial else "")

    def replies(self, bot: str) -> str:
        return f"{self.prefix}replies:{bot}"

    def learner(self, learner: str) -> str:
        return f"{self.prefix}admit:learner:{learner}"

    def rate(self, learner: str) -> str:
        return f"{self.prefix}admit:rate:{learner}"

    def queue(self, pool: str, trial: bool = False) -> str:
        return f"{self.prefix}admit:queue:{pool}" + (":trials" if trial else "")

    @property
    def epoch(self) -> str:
        return f"{self.prefix}admit:epoch"

    def hosts(self, pool: str) -> str:
        return f"{self.prefix}hosts:{pool}"

    def reclaims(self, pool: str) -> str:
        return f"{self.prefix}hosts:reclaims:{pool}"

    def answered(self, rid: str) -> str:
        return f"{self.prefix}answered:{rid}"


@dataclass(frozen=True)
class FleetTiming:
    """How long things wait, in seconds. A host renews its claim on the runs it works on at
    each heartbeat; a host takes over the runs of a host that missed three heartbeats, and
    a run its live host has not renewed for `claim_idle_s` (the longest request's runs, a
    behaviour exercise tried on upload: three wall limits, plus a margin for judging); the
    bot gives up on a run after `patience_s`, long enough for one takeover and a second
    try of the longest request."""

    patience_s: float = 100.0
    claim_idle_s: float = 50.0
    claim_every_s: float = 2.0  # how often a host with a free slot looks for orphans
    heartbeat_s: float = 5.0  # a host's load in `hosts:{pool}`; stale after 3 beats
    reply_ttl_s: float = 300.0  # a dead bot's replies vanish after this
    forget_after_s: float = 600.0  # a gone host, with nothing pending, leaves the group
    block_s: float = 2.0  # one blocking read or idle wait; also how soon a stop is noticed
    refused_retry_s: float = 60.0  # the longest wait between tries while Redis refuses us

    @classmethod
    def for_limits(cls, wall_s: float, reply_margin_s: float, **overrides) -> FleetTiming:
        longest = MOST_RUNS * wall_s + reply_margin_s
        values = {"patience_s": 2 * longest, "claim_idle_s": longest, **overrides}
        return cls(**values)


def redacted(address: str) -> str:
    """The address without its password, for logs."""
    from urllib.parse import urlsplit

    if not is_broker(address):
        return address
    parts = urlsplit(address)
    where = f"{parts.hostname}:{parts.port or 6379}"
    return f"{parts.scheme}://{parts.username or ''}{'@' if parts.username else ''}{where}"


def connect(url: str, **options):
    """An asyncio Redis client for `redis://user:password@host:port/db` or `rediss://`
    (TLS; `?ssl_ca_certs=/path` to trust a private CA). Replies as text."""
    import redis.asyncio as aioredis

    # A burst of runs waits for a connection instead of failing past the pool's size
    # (redis-py's default pool raises "Too many connections" at 100).
    # Text that is not UTF-8 (a forged job) reads with U+FFFD rather than raising.
    options = {"encoding_errors": "replace", **options}
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=30, decode_responses=True,
        socket_connect_timeout=5, socket_timeout=30, health_check_interval=30, **options)
    return aioredis.Redis.from_pool(pool)


def redis_ms(time_reply) -> int:
    """Redis's TIME reply as milliseconds: one clock for every host and bot."""
    seconds, micros = time_reply
    return int(seconds) * 1000 + int(micros) // 1000


class Clock:
    """Redis's clock, read once and then followed locally (entry ids are on it too)."""

    def __init__(self) -> None:
        self.offset_ms = 0.0

    async def sync(self, redis) -> None:
        self.offset_ms = redis_ms(await redis.time()) - time.time() * 1000

    def now_ms(self) -> int:
        return int(time.time() * 1000 + self.offset_ms)


def entry_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


def live_hosts(reports: dict[str, str], now_ms: int,
               heartbeat_s: float) -> tuple[dict[str, dict], list[str]]:
    """A pool's `hosts:{pool}` hash split in two: the reports heard within three beats, and
    the names of the rest (gone, or unreadable)."""
    stale = now_ms - BEATS * heartbeat_s * 1000
    live, gone = {}, []
    for name, value in reports.items():
        try:
            report = json.loads(value)
            fresh = report["seen_ms"] >= stale
        except (ValueError, TypeError, KeyError):
            fresh = False
        if fresh:
            live[name] = report
        else:
            gone.append(name)
    return live, gone


# A job on the inbox: its head (one line of JSON: whose it is, where its reply goes, its
# deadline) within HEAD_MAX bytes, a newline, and the request. A host is given the request
# only when the whole job is within `job_max_bytes` (`broker_functions.take`).
HEAD_MAX = 1024


def job_max_bytes(code_max_bytes: int) -> int:
    """The largest job a host reads: a request holds at most eleven texts of the code bound
    (an answer, and a behaviour exercise's cases, reference and eight versions, a deck's
    256 KiB at most), each at most a few times that once escaped as JSON."""
    return 32 * code_max_bytes


def job_request(request: dict) -> str:
    return json.dumps(request, ensure_ascii=False, separators=(",", ":"))


def job_element(rid: str, bot: str, learner: str, deadline_ms: int, request: str) -> str:
    """A job as a bot pushes it: the head's line, then the request (`job_request`)."""
    head = {"rid": rid, "reply_to": bot, "learner": learner, "deadline_ms": deadline_ms}
    return json.dumps(head, separators=(",", ":")) + "\n" + request


# What the fleet asks of redis-server beyond the ACL file (compose.yaml and LocalRedis pass
# them): a keyspace event when a job is pushed, so an idle host takes it at once (without
# them a host looks every `FleetTiming.block_s`); no value larger than 8 MiB (a job is at
# most `job_max_bytes`: 2 MiB with the default limits).
REDIS_SETTINGS = {"notify-keyspace-events": "Kl", "proto-max-bulk-len": "8mb"}


# Each user's commands, by where they may use them. Functions run with their caller's
# permissions: what `broker_functions` calls is here too, on the keys it is called with.
_BOT_ADMIT = ("fcall", "get", "set", "del", "zadd", "zrem", "zcard", "zcount", "zrange",
              "zremrangebyscore", "pexpire", "time", "ping", "hello", "auth")
_HOST_COMMANDS = ("fcall", "function|load", "lpop", "xreadgroup", "xautoclaim", "xclaim",
                  "xpending", "xrange", "xack", "xdel", "xadd", "xgroup|create",
                  "xgroup|delconsumer", "xinfo|consumers", "pexpire", "time", "hset", "hdel",
                  "hgetall", "incrby", "set", "get", "subscribe", "unsubscribe", "ping",
                  "hello", "auth")

# The default user stays off (a connection that has not logged in can do nothing, and no one
# can log in as it) but holds every permission: Redis replays its append-only log's
# MULTI/EXEC blocks, and so every Lua script's writes, checking the default user's
# permissions, and drops each one it denies, silently (redis#14541, in 7.0.15 and 7.2 among
# others, until redis#14545; valkey#3983). A bare `user default off` loses every admission
# and every transaction at each restart.
DEFAULT_USER = "user default off ~* &* +@all"


def acl_rules(bot_password: str, host_password: str, prefix: str = PREFIX) -> str:
    """Redis's ACL file for the fleet: the default user off (`DEFAULT_USER`); the bot's user
    may admit runs (the fleet's functions and the admission keys), push jobs on the inboxes
    (`RPUSH` only: never read, remove or trim them), read replies and the hosts' load, and
    nothing else; the hosts' user may load the fleet's functions, take, claim and
    acknowledge jobs, hear that one was pushed, write replies and keep its answers. Neither
    may run a script of its own. `>password` lines: keep the file private."""
    def commands(names: tuple[str, ...]) -> str:
        return " ".join(f"+{name}" for name in names)

    for password in (bot_password, host_password):
        if not password or any(c.isspace() for c in password):
            raise ValueError("each password must be non-empty, without spaces")
    keys = Keys(prefix)
    inboxes = " ".join(f"%W~{keys.inbox(pool, trial)}" for pool in POOLS
                       for trial in (False, True))
    return "\n".join([
        DEFAULT_USER,
        f"user {BOT_USER} on >{bot_password} resetkeys ~{prefix}admit:* resetchannels "
        f"-@all {commands(_BOT_ADMIT)} ({inboxes} +rpush) (%R~{prefix}replies:* +xread) "
        f"(%R~{prefix}hosts:* +hgetall +get)",
        f"user {HOST_USER} on >{host_password} resetkeys ~{prefix}jobs:* ~{prefix}inbox:* "
        f"%W~{prefix}replies:* ~{prefix}hosts:* ~{prefix}answered:* resetchannels "
        f"&__keyspace@*__:{prefix}inbox:* -@all {commands(_HOST_COMMANDS)}",
        "",
    ])
