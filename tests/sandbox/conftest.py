"""The sandbox tests' service: one per module with tight limits, so hostile programs end
quickly (the host-side probes are tests/helpers/sandbox.py); and a roomy one for honest
work that takes seconds on a busy machine."""

from __future__ import annotations

import dataclasses

import pytest
import pytest_asyncio

from bot.bench.local_redis import LocalRedis
from bot.sandbox.client.client import SandboxClient
from tests.helpers.sandbox import TEST_LIMITS


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory):
    client = SandboxClient(limits=TEST_LIMITS, parallel=2, runs_per_minute=10_000)
    info = await client.start()
    assert info.cgroups is not None
    try:
        yield client
    finally:
        await client.stop()


# Filling the memory limit, or searching every object of a process, took over the 3 s wall
# with another suite's runs in the sandbox beside these (all runs share one cgroup's CPU
# weight). Here the wall only bounds a run that should have ended: what a test asserts (the
# memory limit stopped it, the search found nothing) still decides it.
ROOMY_LIMITS = dataclasses.replace(TEST_LIMITS, wall_s=30.0)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def roomy_sandbox():
    client = SandboxClient(limits=ROOMY_LIMITS, parallel=2, runs_per_minute=10_000)
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


@pytest.fixture
def redis():
    """A redis-server of the test's own (modules sharing one override it per module)."""
    with LocalRedis() as server:
        yield server
