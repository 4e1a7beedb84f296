"""The decks a learner plays here, everywhere (issue 25, points 1, 2 and 11): /stats,
reminders, DMs and /practice topics follow a server's enabled decks, and in a DM those of
the server the learner used last (bot/engine/plays.py).

A server that plays only its own uploaded deck (content/examples/tensor-basics.yaml: two cards,
topic "devices") beside the bundled deck.
"""

from __future__ import annotations

import pytest

from bot.discord_ui.reminders import DiscordReminderSender
from tests.helpers.discord import (
    card_id_of,
    choose,
    custom_ids,
    learner_of,
    pick_and_submit,
)
from tests.helpers.engines import engine_of
from tests.helpers.paths import COMMUNITY_DECK

DECK = COMMUNITY_DECK
OWN = ("tensor-basics/move", "tensor-basics/shape")


@pytest.fixture
async def own_deck_only(world, admin):
    """The server plays only the deck it uploaded."""
    _, channel, *_ = world
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    await admin.slash(channel, "deck disable", deck="gradient-accumulation")


async def answer_right(actor, message) -> None:
    """Answer one of the uploaded deck's cards right on the first try."""
    if any(cid.startswith("srs:opt:") for cid in custom_ids(message)):  # the choice card
        await choose(actor, message, "copy")
    else:
        await pick_and_submit(actor, message, {"attr": "shape"})


async def learn_own_deck(ann, channel, store) -> list[str]:
    """ann learns both of the server's cards; their ids, in the order served."""
    served = []
    for _ in OWN:
        card = (await ann.slash(channel, "learn")).response
        served.append(card_id_of(store, card))
        await answer_right(ann, card)
    return served


async def stats_fields(actor, where=None) -> dict[str, str]:
    result = await (actor.slash(where, "stats") if where else actor.slash("stats"))
    message = result.followups[-1] if result.followups else result.response
    return {f.name: f.value for f in message.embeds[0].fields}


async def remind(ann, channel, store, clock, simcord_env, tutor):
    """ann opts in; a day later her reminder is due and the sweep runs."""
    await ann.slash(channel, "settings", reminders=True, timezone="UTC", reminder_hour=18)
    clock.advance(days=1)
    store.learners.update(learner_of(store, ann).id, next_reminder_at=clock.now)
    return await engine_of(tutor).reminder_sweep(DiscordReminderSender(simcord_env.bot)).run()


# -- point 1: /stats ---------------------------------------------------------------------


async def test_stats_count_the_decks_the_server_plays(world, own_deck_only, clock, store):
    _, channel, ann, _ = world
    assert sorted(await learn_own_deck(ann, channel, store)) == sorted(OWN)
    fields = await stats_fields(ann, channel)
    assert fields["Cards seen"] == "2 / 2"  # not the bundled deck's count
    assert fields["Due now"] == "0" and fields["Next review"] != "–"
    clock.advance(days=1)
    fields = await stats_fields(ann, channel)
    assert fields["Due now"] == "2" and fields["Next review"] == "now"
    review = (await ann.slash(channel, "review")).response
    assert card_id_of(store, review) in OWN  # what /stats calls due is what /review serves


# -- point 2: reminders and DMs ------------------------------------------------------------


async def test_a_reminder_counts_what_review_now_serves_from_the_dm(
        world, own_deck_only, store, clock, simcord_env, bot_tutor):
    _, channel, ann, _ = world
    await learn_own_deck(ann, channel, store)
    report = await remind(ann, channel, store, clock, simcord_env, bot_tutor)
    assert report.sent == 1
    dm = ann.user.dm_channel.last_message
    assert "2 cards are due for review." in dm.content
    review = await ann.user.click(dm, label="Review now")
    assert review.response.embeds, review.response.content  # not "Nothing is due"
    assert card_id_of(store, review.response) in OWN


async def test_no_reminder_for_the_cards_of_a_removed_deck(
        world, own_deck_only, admin, store, clock, simcord_env, bot_tutor):
    _, channel, ann, _ = world
    await learn_own_deck(ann, channel, store)
    await admin.slash(channel, "deck remove", deck="tensor-basics")
    report = await remind(ann, channel, store, clock, simcord_env, bot_tutor)
    assert (report.sent, report.nothing_due) == (0, 1)
    fields = await stats_fields(ann, channel)  # the server plays the bundled deck again
    bundled = len(bot_tutor.servable())
    assert fields["Due now"] == "0" and fields["Cards seen"] == f"0 / {bundled}"


async def test_a_dm_plays_the_decks_of_the_server_used_last(
        world, admin, store, clock, simcord_env, bot_tutor):
    """ann learned a bundled card; then her server switched the bundled deck off: neither
    the reminder, nor /learn and /stats in a DM, offer it any more."""
    _, channel, ann, _ = world
    bundled = (await ann.slash(channel, "learn")).response
    assert card_id_of(store, bundled) == "gradient-accumulation/zero-grad"
    await pick_and_submit(ann, bundled, {"method": "zero_grad"})
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    report = await remind(ann, channel, store, clock, simcord_env, bot_tutor)
    assert (report.sent, report.nothing_due) == (0, 1)
    learned = (await ann.user.slash("learn")).response
    assert card_id_of(store, learned) in OWN  # not the bundled deck the server turned off
    assert (await stats_fields(ann.user))["Cards seen"] == "0 / 2"


async def test_a_dm_follows_the_server_used_most_recently(world, simcord_env, own_deck_only,
                                                         clock, store):
    """Two servers: a DM plays the decks of the one the learner used last."""
    _, channel, ann, _ = world
    other = simcord_env.create_guild(name="Other")
    hall = other.create_text_channel("hall")
    ann_there = other.add_member(ann.user)
    await ann.slash(channel, "learn")
    assert card_id_of(store, (await ann.user.slash("learn")).response) in OWN
    clock.advance(minutes=1)
    await ann_there.slash(hall, "learn")  # the bundled deck: all that server plays
    dm = (await ann.user.slash("learn")).response
    assert card_id_of(store, dm).startswith("gradient-accumulation/")


# -- point 11: /practice topics ----------------------------------------------------------


async def test_practice_offers_and_serves_the_topics_of_the_decks_played_here(
        world, own_deck_only, simcord_env, store):
    _, channel, ann, _ = world
    offered = await ann.autocomplete(channel, "practice", "topic", "dev")
    assert [c["value"] for c in offered] == ["devices"]
    assert await ann.autocomplete(channel, "practice", "topic", "loss") == []  # switched off
    card = (await ann.slash(channel, "practice", topic="devices")).response
    assert card_id_of(store, card) in OWN
    refused = (await ann.slash(channel, "practice", topic="loss-scaling")).response
    assert "No topic `loss-scaling` in the decks you play here" in refused.content
    assert "Topics: devices." in refused.content
    # In a DM: the topics of the server used last.
    assert [c["value"] for c in await ann.user.autocomplete("practice", "topic", "dev")] == [
        "devices"]
    other = simcord_env.create_guild(name="Other")
    hall = other.create_text_channel("hall")
    ann_there = other.add_member(ann.user)
    assert await ann_there.autocomplete(hall, "practice", "topic", "dev") == []  # not played there


async def test_stats_misconceptions_are_those_of_the_decks_played_here(world, own_deck_only,
                                                                       simcord_env, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    while card_id_of(store, card) != "tensor-basics/move":  # the card with the 'in place' lure
        await answer_right(ann, card)
        card = (await ann.slash(channel, "learn")).response
    await choose(ann, card, "none")  # shows 'Thinking to() works in place'
    await choose(ann, card, "copy")
    assert "Thinking to() works in place" in (await stats_fields(ann, channel))[
        "Your mistakes"]
    elsewhere = simcord_env.create_guild(name="Bundled Only")
    hall = elsewhere.create_text_channel("hall")
    fields = await stats_fields(elsewhere.add_member(ann.user), hall)  # the bundled deck only
    assert "Your mistakes" not in fields
