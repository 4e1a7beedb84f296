"""Hostile text through the real client: a learner's exception, a community deck's words,
names. What reaches Discord is inert (learner text as code, no bidi, no live link or
mention outside code) and no message the bot sends may ping anyone."""

from __future__ import annotations

import discord
import pytest

from bot.discord_ui.client import TutorBot
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary, parse_deck
from tests.helpers.clock import store_now
from tests.helpers.discord import choose, letter_for, verdict_message
from tests.helpers.engines import engine_of
from tests.helpers.hostile import HOSTILE, SAFE_LINE, assert_inert, assert_quoted, judge
from tests.helpers.paths import COMMUNITY_DECK
from tests.helpers.records import record

EVIL = "\u202egnp.exe\u202c @everyone <@123> <#9> [click](https://evil.example) \u200b*x*"


def hostile_deck():
    """A community deck (in memory: a stored one renders the same) with EVIL everywhere."""
    deck = parse_deck(COMMUNITY_DECK)
    card = deck.cards[0]
    options = [o.model_copy(update={"text": f"{o.text} {EVIL}", "says": f"says {EVIL}"
                                    if o.says else None}) for o in card.options]
    mistakes = [m.model_copy(update={"title": f"T {EVIL}", "explanation": f"E {EVIL}"})
                for m in deck.mistakes]
    loud = card.model_copy(update={"id": "evil/move", "topics": ["evil"], "options": options,
                                   "prompt": f"P {EVIL}", "takeaway": f"K {EVIL}"})
    return deck.model_copy(update={"id": "evil", "title": f"Deck {EVIL}", "cards": [loud],
                                   "description": f"D {EVIL}", "mistakes": mistakes})


@pytest.fixture
def simcord_bot(store, mini_library, clock) -> TutorBot:
    library = DeckLibrary([*mini_library.decks.values(), hostile_deck()])
    return TutorBot(engine_of(Tutor(store, library, clock=clock, code_judge=judge)))


def assert_nobody_pinged(simcord_env) -> None:
    """Every message the bot sent or edited carried allowed_mentions that ping nobody."""
    sent = 0
    for request in simcord_env.http_requests:
        body = request.json if isinstance(request.json, dict) else {}
        body = body.get("data") if isinstance(body.get("data"), dict) else body
        if request.method in ("POST", "PATCH") and ("content" in body or "embeds" in body):
            sent += 1
            policy = body.get("allowed_mentions")
            assert policy is not None and policy["parse"] == [], (request.path, policy)
            assert not policy.get("users") and not policy.get("roles"), policy
    assert sent


def test_the_safe_line_quotes_the_whole_exception_as_one_span():
    assert SAFE_LINE.startswith("line 2: `ValueError: ") and SAFE_LINE.count("`") == 2
    assert "[click](https://evil.example)" in SAFE_LINE and "\n" not in SAFE_LINE
    assert_quoted(SAFE_LINE)


async def test_a_hostile_exception_posted_in_a_channel_shows_only_as_code(world, simcord_env):
    """The public case: a ```py block mentioning the bot is answered in the channel."""
    _, channel, ann, _ = world
    await ann.slash(channel, "practice", topic="loop")
    bot = simcord_env.bot.user
    await ann.send(channel, f"{bot.mention} my loop:\n```py\nraise ValueError(...)\n```")
    reply = channel.last_message
    assert reply.author.id == bot.id and not reply.mentions and not reply.mention_everyone
    text = reply.embeds[0].description
    assert text.splitlines()[0] == f"• {SAFE_LINE}"  # first: no deck text can reach it
    assert_quoted(text)
    assert_nobody_pinged(simcord_env)


async def test_a_hostile_exception_from_the_editor_shows_only_as_code(world, simcord_env):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    shown = await ann.click(card, label="Write code")
    result = await ann.submit_modal(shown, {"code": f"raise ValueError({HOSTILE!r})\n"})
    text = verdict_message(result).embeds[0].description
    assert f"• {SAFE_LINE}" in text
    assert_quoted(text)
    assert_nobody_pinged(simcord_env)


async def test_a_hostile_deck_renders_inert_from_show_to_feedback(world, simcord_env):
    guild, channel, ann, _ = world
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    shown = (await admin.slash(channel, "deck show", deck="evil")).response
    about, preview = shown.embeds
    listed = (await admin.slash(channel, "deck list")).response.embeds[0].description
    card = (await ann.slash(channel, "practice", topic="evil")).response
    letter = letter_for(card, "none")
    wrong = await choose(ann, card, "none")
    embeds = [about, preview, card.embeds[0], *wrong.response.embeds]
    texts = [about.title, about.description, preview.description, listed,
             *(e.description for e in embeds[2:])]
    for text in texts:
        assert_inert(text)
    assert r"\[click](https://evil.example)" in preview.description
    assert r"\@everyone \<@123> \<#9>" in preview.description
    assert r"Deck gnp.exe \@everyone \<\@123\> \<#9\> \[click\](https://evil.example) \*x\*" \
        in listed
    # The chosen option, bold (its mistake is told with the final verdict).
    assert f"**{letter}. Nothing at all gnp.exe" in wrong.response.embeds[1].description
    assert_nobody_pinged(simcord_env)


async def test_hostile_learner_and_server_names_show_as_written(simcord_env, store):
    guild = simcord_env.create_guild(name=f"Guild {EVIL}")
    channel = guild.create_text_channel("study")
    eve = guild.add_member(simcord_env.create_user("eve", global_name=f"Eve {EVIL}"))
    learner = store.learners.get_or_create(f"discord:{eve.id}", display_name=f"Eve {EVIL}",
                                           now=store_now())
    store.record(record(learner.id, "r1", card_id="evil/move", kind="review",
                        guild_id=guild.id, changes_schedule=False, reviewed_at=store_now()))
    board = (await eve.slash(channel, "leaderboard")).response.embeds[0]
    stats = verdict_message(await eve.slash(channel, "stats")).embeds[0]  # after a defer
    for text in (board.title, board.description, stats.title):
        assert_inert(text)
    assert board.title.startswith(r"Guild gnp.exe \@everyone \<\@123\>")
    assert r"**Eve gnp.exe \@everyone \<\@123\> \<#9\> \[click\](https://evil.example)" \
        in board.description
    assert stats.title.startswith(r"Eve gnp.exe \@everyone")
    assert_nobody_pinged(simcord_env)
