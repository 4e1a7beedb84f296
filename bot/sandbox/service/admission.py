"""Who runs next in the sandbox service: fair by learner, across every client.

Each request names its learner (an opaque key the bot fills in). A learner has at most one
run queued or in flight, whichever bot process (shard) sent it, so a few learners cannot
hold every slot; with one run each, serving waiting runs in arrival order is round-robin
between learners.

Deck trials (`mode: vet`, an upload's exercises tried before the deck is stored) are a
lower class: each of a trial's runs waits for a slot of its own, behind every learner's
waiting run, and trials hold at most `trial_slots` (a quarter) of the slots at once, so
uploads, however many and however slow, leave learners most of the service. A user of the
machine that is not a bot (`connections`: a socket client such as `tutor check`) may have at
most `user_max` runs, a quarter of the slots, queued or running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter, deque
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
        self.trial_slots = max(1, slots // 4)  # what deck trials may hold at once
        self.queue_max = queue_max
        # Runs one user of the machine that is not a bot (a socket client: `tutor check`,
        # a tool) may have queued or running: a share of the slots, as for trials.
        self.user_max = max(1, slots // 4)
        self._learners: set[str] = set()
        self._users: Counter[str] = Counter()
        self._free = slots
        self._trials = 0  # slots held by trials' runs
        # Waiting runs in arrival order: learners' [False], trials' [True].
        self._queues: dict[bool, deque[asyncio.Future]] = {False: deque(), True: deque()}

    @property
    def waiting(self) -> int:
        return len(self._queues[False]) + len(self._queues[True])

    @contextlib.asynccontextmanager
    async def turn(self, learner: str, user: str | None = None) -> AsyncIterator[None]:
        """Hold `learner`'s place from now to the verdict, and a slot while inside.
        `user`: the machine's user who sent it when that is not a bot (capped)."""
        if learner in self._learners:
            raise Busy("Your previous code is still running; wait for its verdict.")
        if user is not None and self._users[user] >= self.user_max:
            raise Busy(f"You have {self.user_max} runs queued or running already; wait "
                       "for their verdicts.")
        if self.waiting >= self.queue_max:
            raise Busy("The code runner is busy right now; try again in a minute.")
        self._learners.add(learner)
        if user is not None:
            self._users[user] += 1
        try:
            yield
        finally:
            self._learners.discard(learner)
            if user is not None:
                self._users[user] -= 1
                if not self._users[user]:
                    del self._users[user]

    @contextlib.asynccontextmanager
    async def slot(self, trial: bool = False) -> AsyncIterator[None]:
        """A slot for one run; a trial's waits behind learners' and within its share."""
        if self._may_take(trial) and not self._queues[trial]:
            self._take(trial)
        else:
            waiter = asyncio.get_running_loop().create_future()
            self._queues[trial].append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._give_back(trial)  # given a slot, then cancelled before using it
                else:  # still queued, unless a release passed over it once cancelled
                    with contextlib.suppress(ValueError):
                        self._queues[trial].remove(waiter)
                raise
        try:
            yield
        finally:
            self._give_back(trial)

    def _may_take(self, trial: bool) -> bool:
        if not self._free:
            return False
        # Learners first: a trial never takes a slot a learner is waiting for.
        return not trial or (self._trials < self.trial_slots and not self._queues[False])

    def _take(self, trial: bool) -> None:
        self._free -= 1
        self._trials += trial

    def _give_back(self, trial: bool) -> None:
        self._free += 1
        self._trials -= trial
        for kind in (False, True):  # learners' waiting runs, then trials'
            queue = self._queues[kind]
            while queue and self._may_take(kind):
                waiter = queue.popleft()
                if not waiter.done():
                    self._take(kind)
                    waiter.set_result(None)
