"""`tutor run` against the offline Discord, for what needs files, object options and
autocomplete (issue 41.12): /stats defers and then sends its chart (an attachment Discord
gives an id, a size and a URL) and its review buttons answer; /deck upload reads the admin's
file from the CDN's URL; /settings offers timezones as the learner types; a channel option
arrives with the member's permissions in it, as Discord resolves it."""

from __future__ import annotations

import aiohttp
import pytest

from bot.app import build
from scheduler.storage.db import sqlite_url
from tests.helpers.offline_discord import STARTUP_S, OfflineDiscord, free_port, launch_tutor
from tests.helpers.paths import COMMUNITY_DECK

PURPOSE = "gradient-accumulation/purpose"


def seed_a_missed_card(db_url: str, user_id: str) -> None:
    """The learner answered the 'purpose' card wrong three times: /stats offers it again."""
    with build(database_url=db_url, sandbox=False) as app:
        learner = app.tutor.learner(f"discord:{user_id}", "alice")
        served = app.tutor.next_card(learner, mode="practice", only=PURPOSE)
        for wrong in ("combine-gpus", "state-memory", "scale-learning-rate"):
            verdict = app.tutor.answer(served, wrong)
            served = verdict.served
        assert not verdict.correct


def buttons(message: dict) -> dict[str, str]:
    return {b.get("label"): b["custom_id"] for row in message["components"]
            for b in row["components"] if "custom_id" in b}


@pytest.mark.timeout(240)
async def test_files_object_options_and_autocomplete_through_tutor_run(tmp_path):
    server = await OfflineDiscord().start()
    alice = server.create_user("alice")
    guild = server.create_guild("Study Hall", members=[alice])
    channel = guild_channel = server.guilds[guild["id"]]["channels"][0]
    db_url = sqlite_url(tmp_path / "tutor.db")
    seed_a_missed_card(db_url, alice["id"])
    bot = await launch_tutor(server, tmp_path, db_url, free_port())
    try:
        await server.wait_ready(timeout=STARTUP_S)
        await server.wait_commands(timeout=STARTUP_S)

        stats = await server.slash(alice, "stats", guild_id=guild["id"], timeout=60)
        await stats.wait_for(lambda r: r.followups, timeout=60)
        shown = stats.message
        (chart,) = shown["attachments"]
        assert chart["filename"] == "stats.png" and chart["size"] > 1_000
        async with aiohttp.ClientSession() as session, session.get(chart["url"]) as got:
            assert got.status == 200 and (await got.read()).startswith(b"\x89PNG")
        review = next(cid for label, cid in buttons(shown).items()
                      if label.startswith("Practise: "))  # the open mistake's button
        again = await server.click(alice, shown, review, timeout=60)
        assert again.message["embeds"][0]["description"].startswith(
            "What is the main purpose of gradient accumulation")

        typed = await server.autocomplete(alice, "settings", "timezone", "Europe/Ber",
                                          guild_id=guild["id"], timeout=30)
        assert typed.callback_type == 8
        assert {"name": "Europe/Berlin", "value": "Europe/Berlin"} in typed.data["choices"]

        upload = server.attachment(channel["id"], "community.yaml",
                                   COMMUNITY_DECK.encode(), "text/yaml")
        uploaded = await server.slash(alice, "deck", {"file": upload}, guild_id=guild["id"],
                                      subcommand="upload", timeout=60)
        await uploaded.wait_for(lambda r: r.followups or r.callback_type == 4, timeout=120)
        assert uploaded.message["content"].startswith(
            "Uploaded **Tensor basics** (`tensor-basics`), a new deck: version 1")

        moved = await server.slash(alice, "server-settings", {"channel": guild_channel},
                                   guild_id=guild["id"], subcommand="reminder-channel")
        assert f"<#{guild_channel['id']}>" in moved.content
    finally:
        rc = await bot.stop()
        await server.stop()
    log = bot.log.read_text()
    assert rc == 0, log
    assert "Traceback" not in log, log
