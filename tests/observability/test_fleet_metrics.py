"""The sandbox fleet on /metrics: a real Redis, one real host process and the bot's own
sandbox as `start_sandbox` builds it for a `redis://` address."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from bot import observability
from bot.bench.local_redis import LocalRedis
from bot.engine import TryAgain
from bot.observability import REGISTRY
from tests.helpers.engines import judged_by
from tests.helpers.paths import REPO
from tests.helpers.sandbox import TEST_LIMITS, wait_until

HEARTBEAT_S = 0.5


@pytest.fixture(scope="module")
def redis():
    with LocalRedis() as server:
        yield server


@pytest.fixture(scope="module")
def host(redis):
    """One fleet host for the module; the last test stops it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "SANDBOX_BROKER": redis.host_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.sandbox.service",
         "--limits", json.dumps(dataclasses.asdict(TEST_LIMITS)),
         "--fleet", json.dumps({"heartbeat_s": HEARTBEAT_S})],
        cwd=REPO, env=env, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture
def sandbox(tutor, redis, host, monkeypatch):
    monkeypatch.setattr(observability, "FLEET_POLL_S", 0.1)
    started = judged_by(tutor, redis.bot_url)
    assert started is not None
    yield started
    started.stop()


def scrape() -> str:
    return observability.generate_latest(REGISTRY).decode()


def in_flight(pid: int) -> float | None:
    """The host's in-flight gauge (its name holds its pid), or None without its line."""
    found = re.search(rf'tutor_sandbox_host_in_flight{{host="[^"]*-{pid}-[0-9a-f]+",'
                      rf'pool="cpu"}} (\S+)', scrape())
    return float(found.group(1)) if found else None


def queued(pool: str = "cpu") -> float | None:
    found = re.search(rf'tutor_sandbox_queue_depth{{pool="{pool}"}} (\S+)', scrape())
    return float(found.group(1)) if found else None


def gauge(name: str, labels: str = "") -> float | None:
    found = re.search(rf'^{name}{labels} (\S+)$', scrape(), re.M)
    return float(found.group(1)) if found else None


def refusals(reason: str) -> float:
    found = re.search(rf'tutor_sandbox_refusals_total{{reason="{reason}"}} (\S+)', scrape())
    return float(found.group(1)) if found else 0.0


def run(sandbox, code: str, learner: str):
    return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
        sandbox.client.run(code, learner=learner), sandbox.loop))


async def test_queue_in_flight_and_refusals_are_on_metrics(sandbox, host, tutor,
                                                           mini_library):
    await wait_until(lambda: gauge("tutor_sandbox_live_hosts", '{pool="cpu"}') == 1,
                     timeout_s=120, what="the host's first report")  # it imports torch
    assert gauge("tutor_sandbox_broker_up") == 1
    result = await run(sandbox, "print(6 * 7)", "metrics:one")
    assert result.stdout == "42\n"
    # A look taken after the run: nothing queued, nothing in hand (a look may be older).
    await wait_until(lambda: in_flight(host.pid) == 0 and queued() == 0,
                     what="the idle fleet's gauges")
    assert 'tutor_sandbox_reclaims_total{pool="cpu"} 0.0' in scrape()

    # The same learner twice at once: the judge refuses the second and counts why.
    first = run(sandbox, "import time\ntime.sleep(1.5)", "metrics:two")
    await wait_until(lambda: in_flight(host.pid) == 1, what="the first run in hand")
    before = refusals("learner")
    card = next(card for deck in mini_library.decks.values() for card in deck.cards
                if card.type == "code")
    with pytest.raises(TryAgain, match="still running"):
        await asyncio.to_thread(tutor.code_judge, card, "print(1)", "metrics:two")
    assert refusals("learner") == before + 1
    assert (await first).status == "ok"


async def test_zeros_not_gaps_while_redis_is_away(sandbox, redis, host, caplog):
    await wait_until(lambda: gauge("tutor_sandbox_live_hosts", '{pool="cpu"}') == 1,
                     timeout_s=120, what="the host's report")
    reclaims = gauge("tutor_sandbox_reclaims_total", '{pool="cpu"}')
    redis.stop(kill=True)
    try:
        await wait_until(lambda: gauge("tutor_sandbox_broker_up") == 0, what="broker down")
        assert gauge("tutor_sandbox_live_hosts", '{pool="cpu"}') == 0
        assert queued() == 0 and queued("cuda") == 0
        assert in_flight(host.pid) is None
        # A counter never drops (rate() would read a reset): the last count stands.
        assert gauge("tutor_sandbox_reclaims_total", '{pool="cpu"}') == reclaims
        assert "cannot reach Redis" in caplog.text
        assert not sandbox.client.available
    finally:
        redis.start()
    await wait_until(lambda: gauge("tutor_sandbox_broker_up") == 1, what="broker back")
    await wait_until(lambda: gauge("tutor_sandbox_live_hosts", '{pool="cpu"}') == 1,
                     timeout_s=60, what="the host back in the pool")
    assert "Redis answers again" in caplog.text


async def test_a_stopped_host_leaves_metrics(sandbox, host, caplog):
    # Last but one in this module: it stops the module's host.
    await wait_until(lambda: in_flight(host.pid) is not None, timeout_s=120,
                     what="the host's gauge")
    host.terminate()
    await asyncio.to_thread(host.wait, 30)
    await wait_until(lambda: in_flight(host.pid) is None, what="the host's line to go")
    assert queued() == 0
    assert gauge("tutor_sandbox_live_hosts", '{pool="cpu"}') == 0
    await wait_until(lambda: "left pool cpu" in caplog.text, what="the log line")
    assert "no live sandbox host in pool cpu" in caplog.text


async def test_no_fleet_metrics_once_the_sandbox_stops(sandbox, redis):
    await wait_until(lambda: queued() is not None, what="a snapshot")
    sandbox.stop()
    assert queued() is None
