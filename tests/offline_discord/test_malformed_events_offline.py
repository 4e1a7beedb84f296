"""Malformed interactions never stop `tutor run` (issue 36): the real process, on discord.py's
own gateway code, against the offline Discord. SimCord cannot send these payloads.

A component or modal whose custom_id is null, a number or missing, or that has no data at
all, made discord.py's INTERACTION_CREATE parser raise inside the gateway's read loop, which
ended `Client.run`. Each one now gets "out of date"; one discord.py cannot even read (no
token) is dropped with a warning; a card is served and answered afterwards.
"""

from __future__ import annotations

import pytest

from scheduler.storage.db import sqlite_url
from tests.helpers.offline_discord import (
    STARTUP_S,
    OfflineDiscord,
    free_port,
    launch_tutor,
    wait_for_log,
)

MALFORMED = {  # INTERACTION_CREATE fields as no Discord client sends them
    "custom_id null": (3, {"data": {"custom_id": None, "component_type": 2}}),
    "custom_id a number": (3, {"data": {"custom_id": 12345, "component_type": 2}}),
    "custom_id missing": (3, {"data": {"component_type": 2}}),
    "component_type missing": (3, {"data": {"custom_id": "srs:next:review"}}),
    "no data": (3, {"data": None}),
    "data a list": (3, {"data": ["srs:next:review"]}),
    "modal custom_id a number": (5, {"data": {"custom_id": 7, "components": "code"}}),
    "modal without components": (5, {"data": {"custom_id": "srs:modal:0123abcd:0"}}),
}


@pytest.mark.timeout(240)
async def test_malformed_interactions_are_answered_or_dropped_and_the_bot_goes_on(tmp_path):
    server = await OfflineDiscord().start()
    alice = server.create_user("alice")
    guild = server.create_guild("Study Hall", members=[alice])
    bot = await launch_tutor(server, tmp_path, sqlite_url(tmp_path / "tutor.db"), free_port())
    try:
        await server.wait_ready(timeout=STARTUP_S)
        await server.wait_commands(timeout=STARTUP_S)
        card = await server.slash(alice, "practice", {"topic": "concept"},
                                  guild_id=guild["id"])
        for what, (itype, fields) in MALFORMED.items():
            answer = await server.malformed(alice, card, itype, **fields)
            assert answer.callback_type == 4 and answer.ephemeral, what
            thing = "form" if itype == 5 else "button"
            assert answer.content.startswith(f"This {thing} is out of date."), what

        unreadable = await server.malformed(alice, card, wait=False, token=None)
        await wait_for_log(bot, f"dropped an interaction discord.py could not read: "
                                f"id={unreadable.id}")
        assert bot.proc.returncode is None

        # Still serving: a button on the card, then a new card.
        buttons = [b["custom_id"] for row in card.components for b in row["components"]]
        right = next(cid for cid in buttons if cid.endswith(":split-batch-to-save-memory"))
        click = await server.click(alice, card.message, right)
        assert click.callback_type == 7
        assert card.message["embeds"][1]["title"] == "Correct!"
        again = await server.slash(alice, "learn", guild_id=guild["id"])
        assert again.callback_type == 4 and again.embeds
    finally:
        rc = await bot.stop()
        await server.stop()
    log = bot.log.read_text()
    assert rc == 0, log
    assert log.count("Traceback") == 1, log  # the dropped one's, with its warning
    assert log.count("malformed interaction answered as out of date") == len(MALFORMED), log
