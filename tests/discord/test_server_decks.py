"""Several decks loaded at once; each server plays the ones its admins enabled with
/deck enable|disable (the one way to choose; /deck has its own tests in test_decks.py)."""

from __future__ import annotations

import discord
import pytest

from bot.discord_ui.client import TutorBot
from bot.engine.tutor import Tutor
from content.loader import DECKS_DIR, DeckLibrary
from tests.helpers.discord import card_id_of
from tests.helpers.engines import engine_of
from tests.helpers.paths import FIXTURES


@pytest.fixture
def simcord_bot(store, clock) -> TutorBot:
    library = DeckLibrary.load([DECKS_DIR, FIXTURES / "mini.yaml"])
    return TutorBot(engine_of(Tutor(store, library, clock=clock)))


async def test_admins_choose_the_decks_a_server_plays(world, simcord_env, store):
    guild, channel, ann, _ = world
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    first = await ann.slash(channel, "learn")
    assert card_id_of(store, first.response) == "gradient-accumulation/zero-grad"
    choices = await admin.autocomplete(channel, "deck disable", "deck", "mi")
    assert [c["value"] for c in choices] == ["mini"]
    off = await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    assert off.response.content == "Decks played here: **Mini deck** (`mini`)."
    assert store.decks.played(guild.id) == ["mini"]
    mini = await ann.slash(channel, "practice")
    assert card_id_of(store, mini.response) == "mini/clear"
    last = await admin.slash(channel, "deck disable", deck="mini")
    assert "At least one deck" in last.response.content
    assert store.decks.played(guild.id) == ["mini"]
    await admin.slash(channel, "deck enable", deck="gradient-accumulation")
    assert store.decks.played(guild.id) is None  # the default decks again
