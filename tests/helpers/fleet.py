"""A sandbox fleet for tests: a real Redis on loopback, real host processes, fleet clients.

Hosts run `python -m bot.sandbox.service` with the broker's address in their environment,
each in a session of its own so a test can kill one whole host (service, zygote, children)
as a machine that dies would lose them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from bot.bench.local_redis import LocalRedis
from bot.sandbox import broker_functions as functions
from bot.sandbox.broker import GROUP, HEAD_MAX, FleetTiming, Keys, connect, job_max_bytes
from bot.sandbox.client.fleet import FleetClient
from bot.sandbox.protocol import Limits
from tests.helpers.paths import REPO
from tests.helpers.sandbox import TEST_LIMITS

# Quick beats, so tests wait on hosts seconds rather than minutes; a host silent for 5 s
# (TEST_LIMITS' 3 s wall limit plus a margin) loses its runs to the others.
FLEET = {"claim_idle_s": 5.0, "claim_every_s": 0.5, "heartbeat_s": 0.5, "block_s": 0.5}


def client_timing(limits: Limits = TEST_LIMITS, **overrides) -> FleetTiming:
    return FleetTiming.for_limits(limits.wall_s, limits.reply_margin_s,
                                  **{**FLEET, **overrides})


class Host:
    """One sandbox host process of the fleet."""

    def __init__(self, redis: LocalRedis, *, pool: str = "cpu", parallel: int = 2,
                 limits: Limits = TEST_LIMITS, fleet: dict | None = None,
                 environment: dict | None = None, url: str | None = None,
                 log: Path | None = None):
        """`url`: the broker's address (the hosts' user's by default); `log`: a file that
        receives the host's stderr (its log lines)."""
        if log is not None:
            stderr = log.open("ab")
        else:
            stderr = None if os.environ.get("FLEET_HOST_LOGS") else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot.sandbox.service", "--pool", pool,
             "--parallel", str(parallel), "--limits", json.dumps(dataclasses.asdict(limits)),
             "--fleet", json.dumps({**FLEET, **(fleet or {})})],
            cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=stderr,
            env={**(environment or {}), "PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
                 "OMP_NUM_THREADS": "1", "SANDBOX_BROKER": url or redis.host_url})
        if log is not None:
            stderr.close()  # the host has its own copy

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """The machine dies: the host and everything it started, at once."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


async def fleet_client(redis: LocalRedis, **options) -> FleetClient:
    client = FleetClient(redis.bot_url, **{"limits": TEST_LIMITS, "runs_per_minute": 10_000,
                                           "timing": client_timing(), **options})
    await client.start()
    return client


async def live_hosts(client: FleetClient, pool: str = "cpu") -> set[str]:
    return set((await client.hosts(fresh=True))[pool])


async def wait_for_hosts(client: FleetClient, count: int, pool: str = "cpu") -> set[str]:
    """Until `count` hosts of `pool` report in (a host imports torch first: seconds)."""
    found: set[str] = set()

    async def enough() -> bool:
        found.clear()
        found.update(await live_hosts(client, pool))
        return len(found) == count

    deadline = asyncio.get_running_loop().time() + 120
    while not await enough():
        assert asyncio.get_running_loop().time() < deadline, f"hosts up: {found}"
        await asyncio.sleep(0.1)
    return set(found)


async def admin(redis: LocalRedis):
    """A Redis client that may look at everything (the operator's, not the fleet's)."""
    return connect(redis.admin_url)


async def fleet_keys(redis: LocalRedis) -> dict[str, str]:
    """Every key of the fleet and its type."""
    client = await admin(redis)
    try:
        return {key: await client.type(key) async for key in client.scan_iter("tutor:*")}
    finally:
        await client.aclose()



async def join_as(host, pool: str = "cpu") -> None:
    """What a host does when it joins (the functions, the groups), as the hosts' user."""
    await functions.load(host)
    for trial in (False, True):
        await host.xgroup_create(Keys().jobs(pool, trial), GROUP, id="0", mkstream=True)


async def take_as(host, name: str, pool: str = "cpu", trials: bool = False) -> list | None:
    """One job taken as the host `name` would take it: [stream, entry id, fields] or None."""
    keys = Keys()
    return await functions.call(
        host, "take", [keys.inbox(pool), keys.inbox(pool, True), keys.jobs(pool),
                       keys.jobs(pool, True)],
        [GROUP, name, job_max_bytes(TEST_LIMITS.code_max_bytes), HEAD_MAX, int(trials), 1])
