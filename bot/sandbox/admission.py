"""Who runs next in the sandbox service: fair by learner, across every client.

Each request names its learner (an opaque key the bot fills in). A learner has at most one
run queued or in flight, whichever bot process (shard) sent it, so a few learners cannot
hold every slot; with one run each, serving waiting runs in arrival order is round-robin
between learners.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

MIB = 1 << 20


class Busy(Exception):
    """Not admitted; the message says what the learner can do."""


def default_slots(memory_mb: int) -> int:
    """Children at once. More than the CPUs, since a sleeping run uses none (each child is
    held to one CPU's worth by its cgroup where it can be): bounded by memory, so every
    child can use its whole memory limit at once with half the host's memory to spare."""
    cpus = os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // MIB
    except (ValueError, OSError):
        return cpus
    return max(cpus, min(4 * cpus, memory // (2 * max(memory_mb, 1))))


class Admission:
    def __init__(self, slots: int, queue_max: int = 64):
        self.slots = slots
        self.queue_max = queue_max
        self._free = asyncio.Semaphore(slots)  # FIFO: waiting runs go in arrival order
        self._learners: set[str] = set()
        self._waiting = 0

    @contextlib.asynccontextmanager
    async def turn(self, learner: str) -> AsyncIterator[None]:
        """Hold `learner`'s place from now to the verdict, and a slot while inside."""
        if learner in self._learners:
            raise Busy("Your previous code is still running; wait for its verdict.")
        if self._waiting >= self.queue_max:
            raise Busy("The code runner is busy right now; try again in a minute.")
        self._learners.add(learner)
        try:
            yield
        finally:
            self._learners.discard(learner)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self._waiting += 1
        try:
            await self._free.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._free.release()
