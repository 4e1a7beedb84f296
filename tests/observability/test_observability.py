"""/healthz, /metrics and JSON logs."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.engine import TryAgain
from bot.engine.code_judge import SandboxJudge
from bot.observability import (
    FLEET,
    FLEET_STALE_S,
    SANDBOX_REFUSALS,
    HealthServer,
    JsonFormatter,
)
from bot.sandbox.client.client import SandboxClient
from bot.sandbox.client.fleet import FleetStats
from tests.helpers.records import RIGHT


async def test_healthz_reports_each_check_and_fails_when_one_does(store):
    healthy = {"gateway": lambda: True, "database": store.ping}
    async with TestClient(TestServer(HealthServer(healthy).app())) as client:
        response = await client.get("/healthz")
        body = await response.json()
        assert response.status == 200 and body["checks"] == {"gateway": True, "database": True}

    def broken() -> bool:
        raise RuntimeError("database is locked")

    async with TestClient(TestServer(HealthServer({"database": broken}).app())) as client:
        response = await client.get("/healthz")
        assert response.status == 503 and (await response.json())["status"] == "unhealthy"


@pytest.fixture
def fleet_look():
    """Put a look at a sandbox fleet where /healthz and /metrics read it; none afterwards."""
    yield FLEET.update
    FLEET.snapshot = None


async def health(server: HealthServer) -> tuple[int, dict]:
    async with TestClient(TestServer(server.app())) as client:
        response = await client.get("/healthz")
        return response.status, await response.json()


async def test_a_degraded_fleet_is_200_with_its_reasons(store, fleet_look):
    checks = {"gateway": lambda: True, "database": store.ping}
    fleet_look(FleetStats(queue={"cpu": 0, "cuda": 0}, live={"cpu": 2, "cuda": 0}))
    status, body = await health(HealthServer(checks))
    assert (status, body["status"]) == (200, "ok")
    assert body["fleet"] == {"redis": "reachable", "hosts": {"cpu": 2, "cuda": 0},
                             "queue": {"cpu": 0, "cuda": 0}, "reasons": []}

    # A moment without a live host (a Redis that lost the reports) is not yet a problem.
    fleet_look(FleetStats(queue={"cpu": 0, "cuda": 0}, live={"cpu": 0, "cuda": 0}))
    assert (await health(HealthServer(checks)))[1]["status"] == "ok"
    fleet_look(FleetStats(queue={"cpu": 3, "cuda": 0}, live={"cpu": 0, "cuda": 1},
                          hostless={"cpu": True, "cuda": False}))
    status, body = await health(HealthServer(checks))
    assert (status, body["status"]) == (200, "degraded")
    assert body["fleet"]["reasons"] == [
        "no sandbox host in pool cpu has reported for three heartbeats: code answers are "
        "refused"]

    fleet_look(FleetStats(queue={"cpu": 0, "cuda": 0}, live={"cpu": 0, "cuda": 0}, up=False,
                          problem="Redis refused user tutor-bot (WRONGPASS): check ..."))
    status, body = await health(HealthServer(checks))
    assert (status, body["status"], body["fleet"]["redis"]) == (200, "degraded",
                                                                "unreachable")
    assert body["fleet"]["reasons"] == ["redis: Redis refused user tutor-bot (WRONGPASS): "
                                        "check ..."]
    # The bot itself down outranks the fleet: 503.
    status, body = await health(HealthServer({"gateway": lambda: False}))
    assert (status, body["status"]) == (503, "unhealthy")


async def test_a_look_at_the_fleet_that_stopped_coming_is_itself_a_problem(store, fleet_look,
                                                                           monkeypatch):
    fleet_look(FleetStats(queue={"cpu": 0}, live={"cpu": 1}))
    monkeypatch.setattr(FLEET, "taken_at", FLEET.taken_at - 2 * FLEET_STALE_S)
    status, body = await health(HealthServer({"database": store.ping}))
    assert (status, body["status"]) == (200, "degraded")
    assert body["fleet"]["reasons"][0].startswith("no look at the fleet for ")


async def test_metrics_count_answers_and_show_gateway_latency(tutor):
    learner = tutor.learner("local:metrics")
    served = tutor.next_card(learner)
    tutor.answer(served, RIGHT[served.card_id])
    server = HealthServer({}, latency=lambda: 0.042)
    async with TestClient(TestServer(server.app())) as client:
        text = await (await client.get("/metrics")).text()
    assert 'tutor_answers_total{correct="true",kind="new"}' in text
    assert "tutor_gateway_latency_seconds 0.042" in text
    assert "tutor_sandbox_seconds_bucket" in text and "tutor_reminders_total" in text


def test_json_logs_are_one_object_per_line():
    record = logging.LogRecord("bot.flow", logging.ERROR, __file__, 1, "failed: %s", ("x",),
                               None)
    entry = json.loads(JsonFormatter().format(record))
    assert (entry["level"], entry["logger"], entry["message"]) == ("ERROR", "bot.flow",
                                                                   "failed: x")


def test_a_local_sandbox_refusal_is_counted_by_its_reason(mini_library):
    # No queue at all: the local client refuses before it would need its worker.
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    card = next(card for deck in mini_library.decks.values() for card in deck.cards
                if card.type == "code")
    full = SANDBOX_REFUSALS.labels(reason="full")
    before = full._value.get()
    try:
        with pytest.raises(TryAgain, match="busy right now"):
            SandboxJudge(SandboxClient(max_queue=0), loop)(card, "print(1)", "local:a")
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    assert full._value.get() == before + 1
