"""A deck's trial through a fleet (issue 37.1, the bot's side): keyed by its server, one
upload's exercise in flight at a time across the fleet, but never held to a learner's runs
per minute (a deck's cards are tried one after another; the engine rates uploads). A real
Redis with the generated ACL, a real host, a bot's FleetClient."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from bot.bench.local_redis import LocalRedis
from bot.bench.softmax_exercise import REFERENCE as SOFTMAX
from bot.bench.trials import slow_exercise
from bot.sandbox.client.client import SandboxBusy
from tests.helpers.fleet import Host, fleet_client, wait_for_hosts
from tests.helpers.sandbox import sleeping_child, wait_until
from tests.helpers.train_loop import REFERENCE

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bot():
    with LocalRedis() as redis:
        host = Host(redis, parallel=4)
        client = await fleet_client(redis, runs_per_minute=1)  # a learner's 1 a minute
        try:
            await wait_for_hosts(client, 1)
            yield client, host
        finally:
            await client.stop()
            host.stop()


def tried(client, server: int, nap_s: float = 0.0):
    return client.run(SOFTMAX, learner=f"trial:{server}", mode="vet", checker="behaviour",
                      behaviour=slow_exercise(nap_s))


async def test_a_servers_cards_are_tried_one_at_a_time_past_a_learners_rate(bot):
    bot, host = bot
    for _ in range(3):  # three cards in a row: a learner would have been refused at once
        result = await tried(bot, 7)
        assert result.report is not None and result.report.passed, result
    first = asyncio.ensure_future(tried(bot, 8, nap_s=2.0))
    try:
        await wait_until(lambda: sleeping_child(host.pid), what="the first card's run")
        with pytest.raises(SandboxBusy, match="still running"):
            await tried(bot, 8)
        honest = await bot.run(REFERENCE, learner="learner", mode="check",
                               checker="train_loop")
        assert honest.report is not None and honest.report.passed, honest
    finally:
        assert (await first).report.passed
