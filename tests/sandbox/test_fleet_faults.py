"""The fleet's faults as a bot meets them, with a real Redis and real hosts: no host up, the
last host gone with runs waiting, Redis away at start or mid-session. Each costs the learner
nothing (NotJudged, no review), comes at once rather than after the run's patience, and
mends itself when the part comes back."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.engine import NotJudged
from bot.sandbox.client.client import SandboxBusy
from tests.helpers.engines import engine_of, judged_by
from tests.helpers.fleet import Host, client_timing, fleet_client, wait_for_hosts
from tests.helpers.sandbox import sleeping_child, wait_until
from tests.helpers.train_loop import REFERENCE

pytestmark = pytest.mark.asyncio
SLEEPER = "import time\ntime.sleep(30)\n"


@pytest.fixture
def code_card_play(tutor):
    """Serve the mini deck's code card to a learner: (answer it with code as Discord
    does, the card in play)."""
    def serve():
        play = engine_of(tutor).cards
        learner = tutor.learner("discord:7")
        playing = play.serve(learner, mode="practice", card_id="mini/loop")
        return lambda code: play.judge_code(playing, code, learner), playing
    return serve


async def test_no_host_for_three_beats_refuses_and_records_nothing(redis, tutor,
                                                                   code_card_play):
    # The product's own wiring, with the tests' heartbeats (0.5 s): a pool that no host has
    # reported in for three beats refuses at once; the first run, sent before that, is
    # answered then rather than at its patience (58 s here).
    timing = client_timing()
    sandbox = judged_by(tutor, redis.bot_url, timing=timing)
    try:
        answer, playing = code_card_play()
        for _ in range(2):
            started = time.monotonic()
            with pytest.raises(NotJudged) as refused:
                await asyncio.to_thread(answer, REFERENCE)
            assert time.monotonic() - started < timing.patience_s / 2
            assert refused.value.cause == "no_host"
            assert "no code runner is up right now" in str(refused.value)
        assert time.monotonic() - started < 3 * timing.heartbeat_s + timing.block_s + 5
        assert tutor.store.reviews.get(playing.served.serve_id) is None
    finally:
        sandbox.stop()


async def test_runs_waiting_when_the_last_host_dies_are_answered_then(redis):
    client = await fleet_client(redis, max_queue=8)
    host = Host(redis, parallel=1)
    try:
        await wait_for_hosts(client, 1)
        first = asyncio.ensure_future(client.run(SLEEPER, learner="a"))
        await wait_until(lambda: sleeping_child(host.pid), what="the first run sleeping")
        second = asyncio.ensure_future(client.run("print(2)", learner="b"))
        await wait_until(lambda: len(client._runs) == 2, what="the second queued")
        host.kill()
        started = time.monotonic()
        results = await asyncio.gather(first, second)
        # Three missed beats (1.5 s here), not the runs' patience.
        assert time.monotonic() - started < client.timing.patience_s / 2
        assert [r.unjudged for r in results] == ["no_host", "no_host"]
        with pytest.raises(SandboxBusy) as refused:  # and the next is refused at once
            await client.run("print(3)", learner="c")
        assert refused.value.reason == "no_host"
    finally:
        await client.stop()
        host.stop()


async def test_a_bot_started_while_redis_is_away_turns_code_cards_on_when_it_answers(
        redis, tutor, code_card_play, caplog):
    redis.stop(kill=True)
    sandbox = judged_by(tutor, redis.bot_url)
    host = None
    try:
        assert sandbox is not None and tutor.code_judge is not None
        assert not tutor.code_judge.available
        assert "cannot reach Redis" in caplog.text
        assert "mini/loop" not in {card.id for card in tutor.servable("mini")}
        redis.start()
        await wait_until(lambda: tutor.code_judge.available, what="Redis answering again")
        assert "mini/loop" in {card.id for card in tutor.servable("mini")}
        host = Host(redis)
        answer, playing = code_card_play()
        verdict = None
        while verdict is None:  # refused (no host yet) until the host reports
            try:
                verdict = await asyncio.to_thread(answer, REFERENCE)
            except NotJudged as refused:
                assert refused.cause == "no_host"
                await asyncio.sleep(0.5)
        assert verdict.correct and verdict.served.attempts == 1
    finally:
        sandbox.stop()
        if host:
            host.stop()


async def test_redis_away_mid_session_costs_nothing_and_mends(redis, tutor, code_card_play):
    host = Host(redis)
    sandbox = judged_by(tutor, redis.bot_url)
    try:
        await wait_until(lambda: asyncio.run_coroutine_threadsafe(
            sandbox.client.hosts(fresh=True), sandbox.loop).result(10)["cpu"],
            timeout_s=120, what="the host")
        answer, playing = code_card_play()
        redis.stop(kill=True)
        with pytest.raises(NotJudged) as refused:
            await asyncio.to_thread(answer, REFERENCE)
        assert refused.value.cause == "unreachable"
        assert tutor.store.reviews.get(playing.served.serve_id) is None
        redis.start()
        verdict = None
        while verdict is None:  # until Redis and the host's next beat are back
            try:
                verdict = await asyncio.to_thread(answer, REFERENCE)
            except NotJudged as again:
                assert again.cause in ("unreachable", "no_host")
                await asyncio.sleep(0.5)
        assert verdict.correct and verdict.served.attempts == 1
    finally:
        sandbox.stop()
        host.stop()
