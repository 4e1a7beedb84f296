"""The service's event loop never waits on the kernel's cgroup removal (seen blocking it for
up to 2 s on cgroup v2), so every other run's I/O goes on meanwhile."""

from __future__ import annotations

import asyncio
import threading

import pytest

from bot.sandbox.service.service import SandboxService

pytestmark = pytest.mark.asyncio(loop_scope="function")


class _GatedCgroups:
    """A removal that finishes only once the loop has run something else."""

    def __init__(self):
        self.loop_ran = threading.Event()
        self.removed: list[str] = []

    def remove(self, name: str) -> None:
        assert self.loop_ran.wait(30), "cgroup removal held the event loop"
        self.removed.append(name)


async def test_cgroup_removal_runs_beside_the_loop():
    cgroups = _GatedCgroups()
    server = SandboxService(cgroups=cgroups)
    try:
        removal = asyncio.ensure_future(server._remove_cgroup("run-1"))
        await asyncio.sleep(0)  # the removal has started
        asyncio.get_running_loop().call_soon(cgroups.loop_ran.set)
        await asyncio.wait_for(removal, 60)
        assert cgroups.removed == ["run-1"]
    finally:
        server._cleanup.shutdown(wait=True)
