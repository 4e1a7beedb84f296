"""The service's admission as a unit: learners before trials, the trials' share, and a
waiting run cancelled (its client gone) giving back nothing it did not hold."""

from __future__ import annotations

import asyncio

import pytest

from bot.sandbox.service.admission import Admission, Busy

pytestmark = pytest.mark.asyncio


async def hold(admission: Admission, trial: bool, started: list, release: asyncio.Event,
               name: str) -> None:
    async with admission.slot(trial=trial):
        started.append(name)
        await release.wait()


async def test_waiting_learners_go_before_trials_and_trials_keep_to_their_share():
    admission, release, started = Admission(slots=4), asyncio.Event(), []
    tasks = [asyncio.ensure_future(hold(admission, True, started, release, f"trial{i}"))
             for i in range(3)]
    tasks += [asyncio.ensure_future(hold(admission, False, started, release, f"learner{i}"))
              for i in range(4)]
    await asyncio.sleep(0)
    # One trial (a quarter of 4), then three learners; the fourth learner waits, first.
    assert started == ["trial0", "learner0", "learner1", "learner2"]
    release.set()
    await asyncio.gather(*tasks)
    assert started.index("learner3") < started.index("trial1")


async def test_a_cancelled_waiter_passed_over_by_a_release_leaves_the_counts_whole():
    admission, release, started = Admission(slots=1), asyncio.Event(), []
    first = asyncio.ensure_future(hold(admission, False, started, release, "first"))
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(hold(admission, False, started, release, "gone"))
    await asyncio.sleep(0)
    release.set()  # the holder wakes first, and releases ...
    waiting.cancel()  # ... past this waiter, cancelled now, whose task runs after
    await asyncio.gather(first, waiting, return_exceptions=True)
    assert waiting.cancelled() and started == ["first"]
    again = asyncio.Event()
    again.set()
    await hold(admission, False, started, again, "next")  # the slot is free, once
    assert admission.waiting == 0 and started == ["first", "next"]


async def test_one_learner_one_run():
    admission = Admission(slots=2)
    async with admission.turn("ann"):
        with pytest.raises(Busy, match="still running"):
            async with admission.turn("ann"):
                pass
