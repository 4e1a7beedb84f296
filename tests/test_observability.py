"""/healthz, /metrics and JSON logs."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.engine.code_judge import SandboxJudge
from bot.engine.tutor import TryAgain
from bot.observability import SANDBOX_REFUSALS, HealthServer, JsonFormatter
from bot.sandbox.client import SandboxClient
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
