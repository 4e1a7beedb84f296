"""Jobs forged with the bots' password, against a real Redis loaded with the generated ACL
file and real `tutor sandbox serve` hosts (issue 37.2, 37.3): a job far larger than any
request, jobs a bot never writes, and commands that would empty, trim or wedge the queue.
Each costs the attacker a refusal or its own answer; the host reads no more of a job than
its bound, and other learners' verdicts come back as before."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import NoPermissionError, RedisError

from bot.bench.local_redis import LocalRedis
from bot.sandbox.broker import GROUP, REDIS_SETTINGS, Keys, job_max_bytes
from bot.sandbox.protocol import OK, REFUSED
from bot.sandbox.service.fleet_answers import UNREADABLE
from tests.helpers.fleet import Host, admin, fleet_client, wait_for_hosts
from tests.helpers.sandbox import TEST_LIMITS

KEYS = Keys()
INBOX, JOBS = KEYS.inbox("cpu"), KEYS.jobs("cpu")
SPY = "spy"  # the bot process a forged job names for its reply
MIB = 1 << 20


@pytest.fixture
def roomy_redis():
    """A Redis that takes values of any size (its default 512 MB): only the host's own
    bound stands between a huge job and the host."""
    with LocalRedis(settings={**REDIS_SETTINGS, "proto-max-bulk-len": "512mb"}) as server:
        yield server


def high_water_kib(pid: int) -> int:
    """The most memory the process has held (VmHWM), in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines()
                    if line.startswith("VmHWM:")).split()[1])


def head(rid: str) -> bytes:
    return json.dumps({"rid": rid, "reply_to": SPY, "learner": "attacker",
                       "deadline_ms": int(time.time() * 1000) + 60_000}).encode()


async def spy_replies(redis: LocalRedis, count: int) -> dict[str, dict]:
    """The answers the hosts wrote for the forged jobs, by request id (the admin reads)."""
    looker = await admin(redis)
    try:
        while True:
            entries = await looker.xrange(KEYS.replies(SPY))
            if len(entries) >= count:
                return {f["rid"]: json.loads(f["result"]) for _, f in entries}
            await asyncio.sleep(0.1)
    finally:
        await looker.aclose()


async def queue_empty(redis: LocalRedis) -> bool:
    looker = await admin(redis)
    try:
        return not (await looker.llen(INBOX) or await looker.xlen(JOBS)
                    or (await looker.xpending(JOBS, GROUP))["pending"])
    finally:
        await looker.aclose()


async def test_a_huge_job_is_answered_without_being_read(roomy_redis):
    host = Host(roomy_redis, parallel=2)
    client = await fleet_client(roomy_redis)
    raw = aioredis.Redis.from_url(roomy_redis.bot_url)  # bytes, as an attacker sends them
    try:
        await wait_for_hosts(client, 1)
        assert (await client.run("print('warm')", learner="warm")).status == OK
        before = high_water_kib(host.pid)
        await raw.rpush(INBOX, head("huge") + b"\n" + b'{"code":"' + b"x" * (100 * MIB)
                        + b'"}')
        answer = (await spy_replies(roomy_redis, 1))["huge"]
        assert answer["status"] == REFUSED
        assert f"a sandbox host reads at most {job_max_bytes(TEST_LIMITS.code_max_bytes)}" \
            in answer["stderr"]
        assert high_water_kib(host.pid) - before < 16 * 1024  # it never held the 100 MiB
        result = await client.run("print('next')", learner="next")
        assert (result.status, result.stdout) == (OK, "next\n")
        assert host.process.poll() is None
    finally:
        await raw.aclose()
        await client.stop()
        host.stop()


async def test_redis_refuses_a_value_past_the_fleets_bound(redis):
    raw = aioredis.Redis.from_url(redis.bot_url)
    try:
        with pytest.raises(RedisError):  # proto-max-bulk-len: 8 MiB
            await raw.rpush(INBOX, b"x" * (9 * MIB))
        assert await raw.rpush(INBOX, b"x" * MIB) == 1  # a job's size goes through
    finally:
        await raw.aclose()


async def test_forged_jobs_cost_only_themselves(redis):
    host = Host(redis, parallel=2)
    client = await fleet_client(redis)
    raw = aioredis.Redis.from_url(redis.bot_url)
    try:
        await wait_for_hosts(client, 1)
        forged = [b"no head at all " * 200,  # no newline within the head's bound
                  b'{"rid": 1}\n{"code": "print(1)"}',  # a head no bot writes
                  head("not-utf8") + b'\n{"code": "print(\xff\xfe)"}',
                  head("\xff-head").replace(b"\\u00ff", b"\xff") + b'\n{"code": "1"}',
                  head("deep") + b"\n" + b"[" * 100_000 + b"]" * 100_000,
                  head("a-list") + b'\n["print(1)"]']
        for job in forged:
            await raw.rpush(INBOX, job)
        results = await asyncio.gather(*(client.run(f"print({i})", learner=f"l{i}")
                                         for i in range(4)))
        assert [(r.status, r.stdout) for r in results] == [(OK, f"{i}\n") for i in range(4)]
        answers = await spy_replies(redis, 4)
        # Read with U+FFFD for each byte that is not UTF-8: not Python, and said so.
        assert answers["not-utf8"]["status"] == REFUSED
        assert "invalid character '\ufffd'" in answers["not-utf8"]["error"]
        assert answers["\ufffd-head"]["status"] == OK
        for rid in ("deep", "a-list"):
            assert (answers[rid]["stderr"], answers[rid]["unjudged"]) == (UNREADABLE,
                                                                          "unreadable")
        while not await queue_empty(redis):  # none is left pending, to be run again
            await asyncio.sleep(0.1)
        assert host.process.poll() is None
    finally:
        await raw.aclose()
        await client.stop()
        host.stop()


async def test_learners_are_answered_while_the_bots_password_attacks(redis):
    """The commands that emptied or wedged the fleet, sent again and again with the bots'
    password while learners' runs go through: each refused, and every run answered."""
    host = Host(redis, parallel=2)
    client = await fleet_client(redis)
    attacker = aioredis.Redis.from_url(redis.bot_url)
    attacks = [("EVAL", "while true do end", 0), ("DEL", INBOX), ("DEL", JOBS),
               ("XADD", JOBS, "MAXLEN", 0, "*", "x", "y"), ("XTRIM", JOBS, "MAXLEN", 0),
               ("LTRIM", INBOX, 1, 0), ("LPOP", INBOX), ("FUNCTION", "FLUSH"),
               ("SCRIPT", "LOAD", "while true do end")]
    refused = []

    async def attack(stop: asyncio.Event) -> None:
        while not stop.is_set():
            for command in attacks:
                try:
                    await attacker.execute_command(*command)
                except NoPermissionError:
                    refused.append(command[0])
            await asyncio.sleep(0.01)

    try:
        await wait_for_hosts(client, 1)
        stop = asyncio.Event()
        attacking = asyncio.ensure_future(attack(stop))
        results = await asyncio.gather(*(client.run(f"print({i})", learner=f"l{i}")
                                         for i in range(8)))
        stop.set()
        await attacking
        assert [(r.status, r.stdout) for r in results] == [(OK, f"{i}\n") for i in range(8)]
        assert len(refused) >= len(attacks) and set(refused) == {a[0] for a in attacks}
    finally:
        await attacker.aclose()
        await client.stop()
        host.stop()
