"""`tutor run`, the real process, against the offline Discord (REST + gateway on loopback).

The bot connects through DISCORD_API_BASE_URL / DISCORD_GATEWAY_URL, reaches READY,
syncs its commands, serves /review, and a wrong button answers with that option's
mistake explanation.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.app import build
from content.loader import DeckLibrary
from scheduler.storage.db import sqlite_url
from tests.helpers.clock import FakeClock
from tests.helpers.offline_discord import (
    STARTUP_S,
    OfflineDiscord,
    free_port,
    launch_tutor,
    wait_for_log,
)

PURPOSE = "gradient-accumulation/purpose"


def seed_due_review(db_url: str, user_id: str) -> None:
    """The learner met the 'purpose' card three days ago, so it is due for review now."""
    clock = FakeClock(datetime.now(UTC) - timedelta(days=3))
    with build(database_url=db_url, clock=clock, sandbox=False) as app:
        learner = app.tutor.learner(f"discord:{user_id}", "alice")
        served = app.tutor.next_card(learner, mode="practice", topic="concept")
        assert served.card_id == PURPOSE
        assert app.tutor.answer(served, "split-batch-to-save-memory").correct


async def get_when(url: str, status: int, timeout: float = 60.0) -> tuple[int, str]:
    """GET url until it answers `status` (the bot may still be connecting)."""
    deadline = asyncio.get_running_loop().time() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(url) as response:
                    text = await response.text()
                    if response.status == status or asyncio.get_running_loop().time() > deadline:
                        return response.status, text
            except aiohttp.ClientConnectionError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
            await asyncio.sleep(0.2)


@pytest.mark.timeout(240)
async def test_tutor_run_serves_review_and_explains_a_wrong_click(tmp_path):
    server = await OfflineDiscord().start()
    alice = server.create_user("alice")
    guild = server.create_guild("Study Hall", members=[alice])
    db_url = sqlite_url(tmp_path / "tutor.db")
    seed_due_review(db_url, alice["id"])
    metrics_port = free_port()
    bot = await launch_tutor(server, tmp_path, db_url, metrics_port)
    try:
        identify = await server.wait_ready(timeout=STARTUP_S)
        assert identify["token"] == "offline-token"
        assert identify["intents"] & (1 << 1 | 1 << 8 | 1 << 15) == 0  # no privileged intent
        commands = {c["name"] for c in await server.wait_commands(timeout=STARTUP_S)}
        assert {"review", "learn", "practice", "help", "stats", "settings", "forget-me",
                "leaderboard", "insights", "server-settings", "deck"} == commands

        review = await server.slash(alice, "review", guild_id=guild["id"])
        assert review.callback_type == 4 and review.ephemeral
        card = review.embeds[0]
        assert card["title"] == "Review · easy · concept"
        buttons = {b["label"]: b["custom_id"] for row in review.components
                   for b in row["components"] if b["custom_id"].startswith("srs:opt:")}
        assert sorted(buttons) == ["A", "B", "C", "D"]

        # Options are shuffled per serve: click the one that confuses it with data parallelism.
        wrong = next(cid for cid in buttons.values() if cid.endswith(":combine-gpus"))
        click = await server.click(alice, review.message, wrong)
        assert click.callback_type == 7
        feedback = review.message["embeds"][1]
        deck = DeckLibrary.load().deck("gradient-accumulation")
        option = next(o for o in deck.card(PURPOSE).options if o.id == "combine-gpus")
        assert feedback["title"] == "Not quite. 2 attempts left."
        assert option.says in feedback["description"]
        # Before the last try: what the pick does, its mistake's paragraph kept for the end.
        assert deck.mistake(option.mistake).explanation[:60] not in feedback["description"]
        assert feedback["description"].endswith("Try again, or press **Hint**.")

        status, health = await get_when(f"http://127.0.0.1:{metrics_port}/healthz", 200)
        assert status == 200, health
        assert json.loads(health)["checks"] == {"gateway": True, "database": True}
        _, metrics = await get_when(f"http://127.0.0.1:{metrics_port}/metrics", 200)
        assert "tutor_gateway_latency_seconds" in metrics
        assert "tutor_event_loop_lag_max_seconds" in metrics
    finally:
        rc = await bot.stop()
        await server.stop()
    log = bot.log.read_text()
    assert rc == 0, log
    assert "synced 11 global commands: review, learn, practice, help" in log, log
    assert "SIGINT: closing the gateway and stopping" in log, log
    assert "Traceback" not in log


@pytest.mark.timeout(240)
async def test_sigterm_stops_tutor_run_as_ctrl_c_does(tmp_path):
    # docker stop sends SIGTERM: the bot closes the gateway (code 1000) and its sandbox
    # service, and exits 0, as on Ctrl-C; the service is gone when the bot is (it waited).
    server = await OfflineDiscord().start()
    bot = await launch_tutor(server, tmp_path, sqlite_url(tmp_path / "tutor.db"), free_port())
    try:
        await server.wait_ready(timeout=STARTUP_S)
        log = await wait_for_log(bot, "code sandbox ready")
        assert server.connected == 1
    finally:
        rc = await bot.stop(signal.SIGTERM)
    try:
        await server._wait(lambda: server.connected == 0, STARTUP_S, "gateway disconnect")
    finally:
        await server.stop()
    log = bot.log.read_text()
    assert rc == 0, log
    assert "SIGTERM: closing the gateway and stopping" in log, log
    service = int(re.search(r"code sandbox ready \(service pid (\d+)\)", log)[1])
    assert not Path(f"/proc/{service}").exists(), "the sandbox service outlived the bot"
    assert "Traceback" not in log


@pytest.mark.timeout(240)
async def test_a_long_rate_limit_on_the_acknowledgement_is_not_waited_out(tmp_path):
    # Discord answers the click's callback with a 429 asking for 4 s: past its own 3 s
    # window, so waiting it out (discord.py's default) answers a dead interaction. The bot
    # gives up inside the window; the answer it stored is shown on the next click.
    server = await OfflineDiscord().start()
    alice = server.create_user("alice")
    guild = server.create_guild("Study Hall", members=[alice])
    db_url = sqlite_url(tmp_path / "tutor.db")
    bot = await launch_tutor(server, tmp_path, db_url, free_port())
    try:
        await server.wait_ready(timeout=STARTUP_S)
        await server.wait_commands(timeout=STARTUP_S)
        card = await server.slash(alice, "practice", {"topic": "concept"},
                                  guild_id=guild["id"])
        assert card.embeds[0]["title"].endswith("concept")  # the purpose card
        # Buttons by option id (the shown order is shuffled): two wrong answers, so the
        # card is still open after the first.
        buttons = {b["custom_id"].rsplit(":", 1)[1]: b["custom_id"] for row in card.components
                   for b in row["components"] if b["custom_id"].startswith("srs:opt:")}
        server.fail_next("POST", "/interactions/*/callback", 429,
                         {"message": "You are being rate limited.", "retry_after": 4.0,
                          "global": False})
        missed = await server.click(alice, card.message, buttons["combine-gpus"],
                                    wait=False)
        await wait_for_log(bot, "no acknowledgement within Discord's 3 s")
        callbacks = [r for r in server.requests
                     if r.path.startswith(f"/interactions/{missed.id}/")]
        assert [r.status for r in callbacks] == [429]  # no retry into a dead interaction
        assert missed.callback_type is None

        again = await server.click(alice, card.message, buttons["state-memory"])
        assert "already counted" in again.content and "as it stands" in again.content
        assert again.embeds[0]["title"] == card.embeds[0]["title"]
    finally:
        rc = await bot.stop()
        await server.stop()
    log = bot.log.read_text()
    assert rc == 0, log
    assert "Traceback" not in log
