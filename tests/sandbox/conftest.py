"""One sandbox worker per module, with tight limits so hostile programs end quickly."""

from __future__ import annotations

import pytest_asyncio

from bot.sandbox.client import SandboxClient
from bot.sandbox.protocol import Limits

TEST_LIMITS = Limits(wall_s=3.0, cpu_s=5, memory_mb=384, data_mb=192, pids=16,
                     output_max_bytes=256 * 1024)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory):
    client = SandboxClient(limits=TEST_LIMITS, parallel=2, runs_per_minute=10_000)
    info = await client.start()
    assert info["cgroups"] is not None
    try:
        yield client
    finally:
        await client.stop()
