"""Deck text in /deck replies and lists is data: a title is one line (an upload with more is
refused), and what an author wrote shows as written in every server that lists the deck,
never as a header, bold, a masked link or a mention."""

from __future__ import annotations

import discord
import pytest

from bot.engine.tutor import Tutor
from content.loader import DeckLibrary, parse_deck
from tests.helpers.discord import final, pings_nobody, untouched
from tests.helpers.engines import engine_of
from tests.helpers.paths import COMMUNITY_DECK as DECK

FAKE = "**Played here**"
LURE = "[Claim your prize](https://evil.example/prize)"
ESCAPED_LURE = r"\[Claim your prize\](https://evil.example/prize)"


def admin_of(simcord_env, guild):
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    return guild.add_member(simcord_env.create_user(f"admin-{guild.name}"), roles=[admins])


def titled(title: str, mistake_title: str = "Thinking to() works in place") -> str:
    return (DECK.replace("title: Tensor basics", f"title: {title}", 1)
            .replace("title: Thinking to() works in place", f"title: {mistake_title}"))


MULTILINE = {  # the file, the line, and what it belongs to and names
    "a deck title": (titled(f'"Tensor basics\\n{FAKE}\\n{LURE}"'), 3,
                     "deck: the deck title"),
    "a line separator": (titled('"Tensor basics\\u2028# Played here"'), 3,
                         "deck: the deck title"),
    "a mistake title": (titled("Tensor basics", f'"In place\\n{FAKE}"'), 8,
                        "mistake in_place: the title of mistake 'in_place'"),
}


@pytest.mark.parametrize("case", MULTILINE)
async def test_a_title_on_several_lines_is_refused(world, simcord_env, bot_tutor, case):
    guild, channel, *_ = world
    text, line, what = MULTILINE[case]
    before = engine_of(bot_tutor).decks.summaries(guild.id)
    up = final(await admin_of(simcord_env, guild).slash(
        channel, "deck upload", file=("evil.yaml", text.encode())))
    assert up.content.startswith("**evil.yaml** was refused: The deck has problems")
    assert f"\nline {line}, {what} must be one line: titles are shown inside lists" in (
        up.content), up.content
    untouched(engine_of(bot_tutor).decks, guild.id, before)


async def test_a_public_decks_title_shows_as_written_in_another_server(world, simcord_env):
    guild, channel, *_ = world
    owner = admin_of(simcord_env, guild)
    loud = f"Tensor basics {FAKE} {LURE} @everyone"
    up = final(await owner.slash(channel, "deck upload",
                                 file=("loud.yaml", titled(f'"{loud}"').encode())))
    assert up.content.startswith("Uploaded **Tensor basics ")
    await owner.slash(channel, "deck publish", deck="tensor-basics", public=True)
    other = simcord_env.create_guild(name="Other Group")
    hall = other.create_text_channel("hall")
    boss = admin_of(simcord_env, other)
    shown = (rf"**Tensor basics \*\*Played here\*\* {ESCAPED_LURE} \@everyone** "
             "(`tensor-basics`)")
    listed = (await boss.slash(hall, "deck list")).response
    available = listed.embeds[0].description.split("**Available**")[1]
    assert f"{shown} · 2 cards · v1 · shared" in available
    assert listed.embeds[0].description.count(FAKE) == 1  # ours, not the title's
    on = (await boss.slash(hall, "deck enable", deck="tensor-basics")).response
    assert on.content.startswith("Decks played here: ") and shown in on.content
    for message in (up, listed, on):
        pings_nobody(message)


def legacy_deck():
    """A deck stored before titles had to be one line: built in memory, as uploads now
    refuse it; it must still show on one line, escaped."""
    deck = parse_deck(DECK)
    return deck.model_copy(update={"id": "legacy", "title": f"Old\n{FAKE}\n{LURE}",
                                   "cards": [deck.cards[0].model_copy(
                                       update={"id": "legacy/move"})]})


@pytest.fixture
def bot_tutor(store, library, clock) -> Tutor:
    return Tutor(store, DeckLibrary([*library.decks.values(), legacy_deck()]), clock=clock)


async def test_a_title_stored_on_several_lines_shows_on_one(world, simcord_env):
    guild, channel, *_ = world
    admin = admin_of(simcord_env, guild)
    listed = (await admin.slash(channel, "deck list")).response.embeds[0].description
    line = rf"**Old \*\*Played here\*\* {ESCAPED_LURE}** (`legacy`) · 1 card"
    assert line in listed and listed.count(FAKE) == 1
    off = (await admin.slash(channel, "deck disable", deck="gradient-accumulation")).response
    assert off.content == f"Decks played here: {line.split(' · ')[0]}."
