"""A fleet losing parts: a host killed mid-run, a run lost twice, Redis restarted with runs
queued, a bot process killed with runs in flight. Each test has its own Redis and hosts.
Every wait is on a condition; the only clock bound is the run's own deadline."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys

import pytest_asyncio

from bot.bench.local_redis import LocalRedis
from bot.sandbox import broker_functions as functions
from bot.sandbox.broker import GROUP, Keys, connect, redis_ms
from bot.sandbox.protocol import ERROR, OK
from bot.sandbox.service.fleet_host import LOST_TWICE
from tests.helpers.fleet import (
    Host,
    admin,
    client_timing,
    fleet_client,
    fleet_keys,
    join_as,
    take_as,
    wait_for_hosts,
)
from tests.helpers.paths import REPO
from tests.helpers.sandbox import TEST_LIMITS, sleeping_child, wait_until

KEYS = Keys()
SLEEPER = "import time\ntime.sleep(2)\nprint('awake')\n"


@pytest_asyncio.fixture
async def fleet(redis):
    """Start hosts with `fleet.hosts(n, **options)`; all are stopped afterwards."""
    class Fleet:
        hosts: list[Host] = []
        client = None

        async def start(self, count: int, **options) -> list[Host]:
            started = [Host(redis, **options) for _ in range(count)]
            self.hosts += started
            self.client = self.client or await fleet_client(redis)
            await wait_for_hosts(self.client, len(self.hosts), options.get("pool", "cpu"))
            return started

    each = Fleet()
    each.client = await fleet_client(redis)
    try:
        yield each
    finally:
        await each.client.stop()
        for host in each.hosts:
            host.stop()


async def reclaims(redis: LocalRedis) -> int:
    client = await admin(redis)
    try:
        return int(await client.get(KEYS.reclaims("cpu")) or 0)
    finally:
        await client.aclose()


async def test_a_host_killed_mid_run_loses_it_to_the_other(redis, fleet):
    hosts = await fleet.start(2)
    run = asyncio.ensure_future(fleet.client.run(SLEEPER, learner="unlucky"))
    busy = await wait_until(lambda: next((h for h in hosts if sleeping_child(h.pid)), None),
                            what="the run sleeping on a host")
    busy.kill()
    result = await run  # within its deadline, or it would say it got no answer
    assert (result.status, result.stdout) == (OK, "awake\n")
    assert await reclaims(redis) == 1


async def test_a_dead_hosts_run_is_taken_over_once_it_misses_three_beats(redis, fleet):
    # Takeover by silence alone would wait 10 minutes here: the dead host's missed
    # heartbeats (1.5 s) are what hand its run to the other.
    hosts = await fleet.start(2, fleet={"claim_idle_s": 600.0})
    run = asyncio.ensure_future(fleet.client.run(SLEEPER, learner="orphaned"))
    busy = await wait_until(lambda: next((h for h in hosts if sleeping_child(h.pid)), None),
                            what="the run sleeping on a host")
    busy.kill()
    result = await run
    assert (result.status, result.stdout) == (OK, "awake\n")
    assert await reclaims(redis) == 1


async def test_a_live_host_keeps_a_run_longer_than_the_takeover_time(redis, fleet):
    # A deck's trial (three runs and judging) can outlast `claim_idle_s`: the host still
    # working on it renews its claim at each beat, so the other host never runs it too.
    limits = dataclasses.replace(TEST_LIMITS, wall_s=10.0, cpu_s=12)
    await fleet.start(2, limits=limits, fleet={"claim_idle_s": 2.0})
    client = await fleet_client(redis, limits=limits, timing=client_timing(limits))
    try:
        result = await client.run("import time\ntime.sleep(6)\nprint('once')\n",
                                  learner="long")
        assert (result.status, result.stdout) == (OK, "once\n")
        assert await reclaims(redis) == 0  # a takeover counts before it runs
        answered_ms = redis_ms(await client.redis.time())

        async def runs_after_a_beat() -> int | None:
            reports = (await client.hosts(fresh=True))["cpu"].values()
            if len(reports) == 2 and all(r["seen_ms"] > answered_ms for r in reports):
                return sum(r["runs"] for r in reports)
            return None

        while (runs := await runs_after_a_beat()) is None:
            await asyncio.sleep(0.1)
        assert runs == 1
    finally:
        await client.stop()


async def test_a_run_lost_twice_is_answered_as_a_crash(redis, fleet):
    # Two hosts that take the run and die before answering, played by the hosts' user.
    # They beat once, which this bot believes for a minute (its heartbeat is 20 s): a run
    # with no live host is refused at once, and a waiting one answered.
    ghost = connect(redis.host_url)
    jobs = KEYS.jobs("cpu")
    await join_as(ghost)
    await ghost.hset(KEYS.hosts("cpu"), "ghost-1", json.dumps(
        {"seen_ms": redis_ms(await ghost.time()), "in_flight": 0}))
    trusting = await fleet_client(redis, timing=client_timing(heartbeat_s=20.0))
    run = asyncio.ensure_future(trusting.run("print('never')", learner="cursed"))
    while not await take_as(ghost, "ghost-1"):
        await asyncio.sleep(0.05)
    claimed = await functions.call(ghost, "claim", [jobs], [GROUP, "ghost-2", 0, 2, ""])
    assert claimed[1] == 2  # its second delivery
    await ghost.aclose()
    [host] = await fleet.start(1, fleet={"forget_after_s": 0.5})
    result = await run
    await trusting.stop()
    assert (result.status, result.stderr, result.unjudged) == (ERROR, LOST_TWICE, "lost")
    assert await reclaims(redis) == 1
    looker = await admin(redis)
    try:  # the dead hosts, with nothing pending, leave the group
        while len(await looker.xinfo_consumers(jobs, GROUP)) > 1:
            await asyncio.sleep(0.1)
    finally:
        await looker.aclose()


async def test_runs_queued_when_redis_restarts_are_all_answered(redis, fleet):
    [host] = await fleet.start(1, parallel=1)
    runs = [asyncio.ensure_future(fleet.client.run(SLEEPER, learner="first"))]
    await wait_until(lambda: sleeping_child(host.pid), what="the first run sleeping")
    runs += [asyncio.ensure_future(fleet.client.run(f"print({i})", learner=f"waiting-{i}"))
             for i in range(3)]
    await wait_until(lambda: len(fleet.client._runs) == 4, what="all four sent")
    await asyncio.to_thread(redis.restart)  # the queue is gone with it
    results = await asyncio.gather(*runs)
    assert [(r.status, r.stdout) for r in results] == [
        (OK, "awake\n"), (OK, "0\n"), (OK, "1\n"), (OK, "2\n")]


async def test_a_bot_that_dies_with_runs_in_flight_leaves_nothing_growing(redis, fleet):
    await fleet.start(1, parallel=1, fleet={"reply_ttl_s": 2.0})
    spec = {"url": redis.bot_url, "hold": True,
            "runs": [{"code": SLEEPER, "learner": f"orphan-{i}"} for i in range(3)]}
    bot = subprocess.Popen([sys.executable, "-m", "tests.helpers.fleet_bot", json.dumps(spec)],
                           cwd=REPO, stdout=subprocess.DEVNULL)
    looker = await admin(redis)
    try:
        jobs, inbox = KEYS.jobs("cpu"), KEYS.inbox("cpu")
        while await looker.zcard(KEYS.queue("cpu")) < 3:  # all three sent
            assert bot.poll() is None
            await asyncio.sleep(0.05)
        bot.kill()
        bot.wait(30)
        while (await looker.llen(inbox) or await looker.xlen(jobs)
               or (await looker.xpending(jobs, GROUP))["pending"]):
            await asyncio.sleep(0.1)  # the host runs them (or drops them) and deletes them
        while [k for k in await fleet_keys(redis) if ":replies:" in k and
               fleet.client.bot not in k]:
            await asyncio.sleep(0.1)  # its replies expire
        for key, kind in (await fleet_keys(redis)).items():
            if kind == "stream":
                assert await looker.xlen(key) == 0, key
            elif not key.endswith((":admit:epoch", ":hosts:cpu", ":hosts:reclaims:cpu")):
                assert await looker.pttl(key) > 0, f"{key} never expires"
    finally:
        bot.kill()
        await looker.aclose()


async def test_a_gpu_host_takes_the_cuda_pool(redis, fleet):
    await fleet.start(1, pool="cuda")
    result = await fleet.client.run("print('gpu pool')", learner="gpu", device="cuda")
    assert (result.status, result.stdout) == (OK, "gpu pool\n")
