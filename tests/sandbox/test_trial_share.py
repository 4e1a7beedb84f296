"""Deck trials are a lower class than learners' answers (issue 37.1), through a real
`tutor sandbox serve` as the bots send them: an upload's exercise (`mode: vet`, keyed by
its server) whose cases sleep, as many at once as the service has slots.

Trials hold at most a quarter of the slots, each of a trial's three runs takes its own turn
behind learners' waiting runs, and a learner's correct answer is judged while they are in
flight. Waits are on conditions; what is asserted is order and counts, not speed.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from bot.bench.softmax_exercise import REFERENCE as SOFTMAX
from bot.bench.trials import slow_exercise
from tests.helpers.sandbox import in_syscall, jailed_processes, wait_until
from tests.helpers.served import Service, serving
from tests.helpers.train_loop import REFERENCE

pytestmark = pytest.mark.asyncio(loop_scope="module")
# A roomy patience: trials waiting behind each other are answered, not dropped as late.
LIMITS = {"wall_s": 10.0, "cpu_s": 12, "memory_mb": 384, "data_mb": 192, "pids": 16,
          "reply_margin_s": 60.0}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def four(tmp_path_factory):
    async with serving(tmp_path_factory.mktemp("four"), "--parallel", "4",
                       limits=LIMITS) as service:
        yield service


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def one(tmp_path_factory):
    async with serving(tmp_path_factory.mktemp("one"), "--parallel", "1",
                       limits=LIMITS) as service:
        yield service


def sleeping(service: Service) -> int:
    return len([p for p in jailed_processes(service.process.pid)
                if in_syscall(p, "clock_nanosleep")])


def trial(client, server: int, nap_s: float):
    """An upload's exercise as the bot sends it (SandboxJudge.vet)."""
    return asyncio.ensure_future(client.run(SOFTMAX, learner=f"trial:{server}", mode="vet",
                                            checker="behaviour",
                                            behaviour=slow_exercise(nap_s)))


async def test_trials_as_many_as_slots_hold_a_quarter_and_a_learner_is_judged(four):
    client = four.client()
    await client.start()
    most, watching = 0, True

    async def watch() -> None:  # the most trial runs at once (only they sleep here)
        nonlocal most
        while watching:
            most = max(most, sleeping(four))
            await asyncio.sleep(0.05)

    watcher = asyncio.ensure_future(watch())
    trials = [trial(client, server, 1.0) for server in range(4)]
    try:
        await wait_until(lambda: sleeping(four), what="a trial's run")
        honest = await client.run(REFERENCE, learner="honest", mode="check",
                                  checker="train_loop")
        trials_left = sum(not t.done() for t in trials)
        results = await asyncio.gather(*trials)
    finally:
        watching = False
        await watcher
        await client.stop()
    assert honest.report is not None and honest.report.passed is True, honest
    assert trials_left >= 1, "the trials were over before the learner's verdict"
    assert most == 1, f"{most} trial runs at once; the trials' share of 4 slots is 1"
    # Slower, not refused: each trial is tried to the end.
    assert all(r.report is not None and r.report.passed for r in results), results


async def test_a_learner_waiting_goes_before_a_trials_next_run(one):
    client = one.client()
    await client.start()
    try:
        tried = trial(client, 1, 2.0)
        await wait_until(lambda: sleeping(one), what="the trial's first run")
        result = await client.run("print('served')", learner="waiting")
        assert result.stdout == "served\n", result
        assert not tried.done(), "the learner waited for the whole trial"
        assert (await tried).report.passed
    finally:
        await client.stop()
