"""Deck trials across a fleet (issue 37.1, the fleet's side): real hosts behind a real Redis
with the generated ACL file. An upload's exercise (`mode: vet`, keyed by its server) waits
in an inbox of its own; hosts take one only within their share of trials, and the pool
never holds more than a quarter of the fleet's slots on trials, so as many hostile uploads
as there are slots leave learners' answers to be judged at once."""

from __future__ import annotations

import asyncio
import time

import pytest_asyncio

from bot.bench.softmax_exercise import REFERENCE
from bot.bench.trials import slow_exercise
from bot.sandbox.broker import GROUP, Keys
from bot.sandbox.protocol import OK
from tests.helpers.fleet import Host, admin, fleet_client, wait_for_hosts
from tests.helpers.train_loop import REFERENCE as TRAIN_LOOP

TRIALS = Keys().jobs("cpu", trial=True)


def trial(client, server: int, exercise: dict):
    return client.run(REFERENCE, learner=f"trial:{server}", mode="vet", checker="behaviour",
                      behaviour=exercise)


async def trials_in_hand(redis) -> int:
    """Trials the pool's hosts hold now (the stream's pending entries, the admin's look)."""
    looker = await admin(redis)
    try:
        return (await looker.xpending(TRIALS, GROUP))["pending"]
    finally:
        await looker.aclose()


@pytest_asyncio.fixture
async def fleet(redis):
    """Two hosts of two slots: four in the fleet, so one trial at a time."""
    hosts = [Host(redis, parallel=2) for _ in range(2)]
    client = await fleet_client(redis)
    try:
        await wait_for_hosts(client, 2)
        yield client
    finally:
        await client.stop()
        for host in hosts:
            host.stop()


async def test_trials_hold_a_quarter_of_the_fleet_and_learners_go_first(redis, fleet):
    in_hand: list[int] = []

    async def watch(stop: asyncio.Event) -> None:
        while not stop.is_set():
            in_hand.append(await trials_in_hand(redis))
            await asyncio.sleep(0.02)

    stop = asyncio.Event()
    watching = asyncio.ensure_future(watch(stop))
    trials = [asyncio.ensure_future(trial(fleet, server, slow_exercise(1.0)))
              for server in range(4)]  # as many uploads as the fleet has slots
    try:
        while not any(in_hand):
            await asyncio.sleep(0.02)
        started = time.monotonic()
        answers = await asyncio.gather(*(
            fleet.run(TRAIN_LOOP, learner=f"learner-{i}", mode="check", checker="train_loop")
            for i in range(3)))
        waited = time.monotonic() - started
        assert all(a.status == OK and a.report.passed for a in answers), answers
        assert waited < 20.0
        assert not all(t.done() for t in trials)  # judged while uploads were being tried
        results = await asyncio.gather(*trials)
        assert all(r.status == OK and r.report.passed for r in results), results
    finally:
        stop.set()
        await watching
    assert max(in_hand) == 1  # a quarter of four slots
