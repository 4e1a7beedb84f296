"""The sandbox tests' service: one per module with tight limits, so hostile programs end
quickly (the host-side probes are tests/helpers/sandbox.py)."""

from __future__ import annotations

import pytest_asyncio

from bot.sandbox.client import SandboxClient
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
