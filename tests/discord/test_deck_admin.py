"""/deck and /server-settings as their admins and others reach them (issue 25): the handler
checks Manage Server itself, a DM is told to use a server, concurrent uploads all count,
and a removed deck stays gone from the servers it was shared with."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import discord
import pytest
import simcord.actors

from bot.engine.tutor import Tutor
from scheduler.storage.db import make_engine
from scheduler.storage.decks import DeckQueries
from scheduler.storage.store import Store
from tests.helpers.discord import card_id_of, final
from tests.helpers.engines import engine_of
from tests.helpers.paths import COMMUNITY_DECK

pytestmark = pytest.mark.postgres

DECK = COMMUNITY_DECK
REFUSED = "Only members with the **Manage Server** permission"


def add_admin(simcord_env, guild, name: str = "root"):
    admins = guild.create_role(f"Admins {name}",
                               permissions=discord.Permissions(manage_guild=True))
    return guild.add_member(simcord_env.create_user(name), roles=[admins])


def renamed(deck_id: str) -> bytes:
    return DECK.replace("tensor-basics", deck_id).encode()


async def test_members_the_owner_let_in_still_need_manage_server(world, simcord_env, decks,
                                                                 store):
    guild, channel, ann, _ = world
    admin = add_admin(simcord_env, guild)
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    for name in ("deck", "server-settings"):  # the owner opens both groups to ann
        command = simcord_env.backend.find_command(name, guild.id)
        guild.set_command_permissions(int(command["id"]), {ann: True})
    before, settings = decks.summaries(guild.id), store.servers.settings(guild.id)
    for name, options in [
            ("deck upload", {"file": ("mine.yaml", renamed("mine"))}),
            ("deck disable", {"deck": "tensor-basics"}),
            ("deck enable", {"deck": "gradient-accumulation"}),
            ("deck publish", {"deck": "tensor-basics", "public": True}),
            ("deck remove", {"deck": "tensor-basics"}),
            ("server-settings learning", {"scheduler": "fsrs", "remediation": False}),
            ("server-settings learning", {"parameters": "revert"})]:
        result = await ann.slash(channel, name, **options)
        assert result.ephemeral and not result.followups, name
        assert result.response.content.startswith(REFUSED), name
        assert f"**/{name}**" in result.response.content
    assert decks.summaries(guild.id) == before and store.decks.get("mine") is None
    assert store.servers.settings(guild.id) == settings
    listed = await ann.slash(channel, "deck list")  # showing what is played changes nothing
    assert "tensor-basics" in listed.response.embeds[0].description
    done = await admin.slash(channel, "deck disable", deck="tensor-basics")
    assert done.response.content.startswith("Decks played here")


async def test_a_forged_command_in_a_dm_is_told_to_use_a_server(world, decks, monkeypatch):
    _, _, ann, _ = world
    # A forged client: Discord's own offers these commands in servers only.
    monkeypatch.setattr(simcord.actors, "_check_command_access", lambda *args: None)
    for name, options in [("deck upload", {"file": ("mine.yaml", renamed("mine"))}),
                          ("deck enable", {"deck": "gradient-accumulation"}),
                          ("server-settings learning", {"remediation": True})]:
        result = await ann.user.slash(name, **options)
        assert result.ephemeral and not result.followups, name
        assert result.response.content.startswith("Use this in a server"), name
    assert decks.tutor.store.decks.get("mine") is None


async def test_five_uploads_at_once_are_all_enabled(world, simcord_env, decks, db_url,
                                                    monkeypatch):
    """One upload through Discord and four from another bot process (a shard) on the same
    database, all let go at once after reading what the server plays."""
    guild, channel, *_ = world
    admin = add_admin(simcord_env, guild)
    at_once, real_get = threading.Barrier(5, timeout=20), DeckQueries.get

    def get(self, deck_id):
        found = real_get(self, deck_id)
        at_once.wait()
        return found

    monkeypatch.setattr(DeckQueries, "get", get)
    tutor = decks.tutor
    shard = engine_of(Tutor(Store(make_engine(db_url)), tutor.decks.bundled,
                                 clock=tutor.clock)).decks
    ids = [f"deck-{i}" for i in range(5)]
    with ThreadPoolExecutor(4) as pool:
        others = [pool.submit(shard.upload, guild.id, f"{d}.yaml", renamed(d), "boss")
                  for d in ids[1:]]
        mine = await admin.slash(channel, "deck upload", file=("deck-0.yaml", renamed(ids[0])))
        assert all(f.result().new for f in others)
    monkeypatch.undo()
    assert "It is enabled here" in final(mine).content
    assert set(ids) <= set(decks.tutor.store.decks.played(guild.id))
    listed = (await admin.slash(channel, "deck list")).response.embeds[0].description
    played = listed.split("**Available**")[0]
    assert all(f"(`{d}`)" in played for d in ids)
    shard.tutor.store.engine.dispose()


async def test_a_removed_shared_deck_does_not_come_back(world, simcord_env, decks):
    guild, channel, *_ = world
    admin = add_admin(simcord_env, guild)
    other = simcord_env.create_guild(name="Other Group")
    hall = other.create_text_channel("hall")
    boss, cat = add_admin(simcord_env, other, "boss"), other.add_member(
        simcord_env.create_user("cat"))
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    await admin.slash(channel, "deck publish", deck="tensor-basics", public=True)
    await boss.slash(hall, "deck enable", deck="tensor-basics")
    await boss.slash(hall, "deck disable", deck="gradient-accumulation")
    assert card_id_of(decks.tutor.store, (await cat.slash(hall, "learn")).response) == (
        "tensor-basics/move")

    await admin.slash(channel, "deck remove", deck="tensor-basics")
    again = await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    assert "Share it with **/deck publish**" in final(again).content
    assert not decks.tutor.store.decks.get("tensor-basics").public
    # The other server plays the default decks again, as a new server would.
    card = (await cat.slash(hall, "learn")).response
    assert card_id_of(decks.tutor.store, card) != "tensor-basics/move"
    listed = (await boss.slash(hall, "deck list")).response.embeds[0].description
    assert "tensor-basics" not in listed
    refused = await boss.slash(hall, "deck enable", deck="tensor-basics")
    assert "Decks played here" not in refused.response.content
