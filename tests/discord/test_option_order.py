"""Shuffled options through the real discord.py client: the letter on a button answers the
option the embed lists under that letter, and every rendering of one served card (after an
attempt, a hint, a stale click, a restart) shows the same order."""

from __future__ import annotations

import copy

from content.loader import DeckLibrary
from tests.helpers.discord import (
    chip_labels,
    custom_ids,
    letter_for,
    shown_options,
    still_showing,
)
from tests.helpers.engines import engine_of

PURPOSE = "gradient-accumulation/purpose"  # the "concept" topic's multiple-choice card


def purpose_options() -> dict[str, str]:
    """{option text: option id} of the card as the deck has it."""
    return {o.text: o.id for o in DeckLibrary.load().deck("gradient-accumulation")
            .card(PURPOSE).options}


def button_ids(message) -> dict[str, str]:
    """{button letter: option id it answers} (a tried option's label is marked "A ✗")."""
    return {c["label"].removesuffix(" ✗"): c["custom_id"].rsplit(":", 1)[1]
            for row in message.components
            for c in row["components"] if c.get("custom_id", "").startswith("srs:opt:")}


async def test_each_button_answers_the_option_listed_under_its_letter(world):
    _, channel, ann, bob = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    ids = purpose_options()
    listed = shown_options(card)
    assert sorted(listed) == ["A", "B", "C", "D"] and set(listed.values()) == set(ids)
    assert button_ids(card) == {letter: ids[text] for letter, text in listed.items()}
    right = next(o.id for o in DeckLibrary.load().deck("gradient-accumulation")
                 .card(PURPOSE).options if o.correct)
    message = card
    for letter, text in listed.items():  # each wrong letter names its own option
        if ids[text] == right:
            continue
        message = (await ann.click(message, label=letter)).response
        assert f"**{letter}. {text}**: " in message.embeds[1].description
    theirs = (await bob.slash(channel, "practice", topic="concept")).response
    mine = await bob.click(theirs, label=next(
        letter for letter, text in shown_options(theirs).items() if ids[text] == right))
    assert mine.response.embeds[1].title == "Correct!"


async def test_every_rendering_of_a_served_card_shows_the_same_order(world, simcord_env,
                                                                    bot_tutor):
    from bot.discord_ui.client import TutorBot

    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    listed, buttons = shown_options(card), button_ids(card)
    first_wrong, second_wrong = [i for i in buttons.values()
                                 if i != "split-batch-to-save-memory"][:2]
    shown = copy.deepcopy(card.components)
    hinted = (await ann.click(card, label="Hint")).response
    assert (shown_options(hinted), button_ids(hinted)) == (listed, buttons)
    wrong = (await ann.click(hinted, label=letter_for(hinted, first_wrong))).response
    assert (shown_options(wrong), button_ids(wrong)) == (listed, buttons)  # the feedback edit
    still_showing(card, shown)
    stale = await ann.click(card, label=letter_for(card, second_wrong))
    assert "as it stands" in stale.response.content
    assert (shown_options(stale.response), button_ids(stale.response)) == (listed, buttons)
    await simcord_env.restart_bot(TutorBot(engine_of(bot_tutor)))
    again = (await ann.click(stale.response,
                             label=letter_for(stale.response, second_wrong))).response
    assert (shown_options(again), button_ids(again)) == (listed, buttons)  # after a restart
    done = await ann.click(again, label=letter_for(again, "split-batch-to-save-memory"))
    assert done.response.embeds[1].title == "Correct, on attempt 3."
    assert shown_options(done.response) == {}  # answered: the card folds to its question


async def test_new_serves_of_a_card_get_new_orders(world):
    _, channel, ann, _ = world
    orders = set()
    for _ in range(6):  # practice serves the unanswered card again, each time anew
        card = (await ann.slash(channel, "practice", topic="concept")).response
        orders.add(tuple(shown_options(card).values()))
    assert len(orders) > 1  # six serves in one order: odds of 1 in 24**5


async def test_chips_keep_their_order_in_every_select_of_a_served_card(world):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loss-scaling")).response
    blanks = [cid.rsplit(":", 1)[1] for cid in custom_ids(card) if cid.startswith("srs:pick:")]
    chips = chip_labels(card, blanks[0])
    assert all(chip_labels(card, blank) == chips for blank in blanks)
    hinted = (await ann.click(card, label="Hint")).response
    assert all(chip_labels(hinted, blank) == chips for blank in blanks)


async def test_a_wrong_letter_clicked_again_costs_no_attempt(world):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    wrong = next(i for i in button_ids(card).values() if i != "split-batch-to-save-memory")
    letter = letter_for(card, wrong)
    after = (await ann.click(card, label=letter)).response
    assert after.embeds[0].footer.text.startswith("2 attempts left")
    # Its button is disabled now (tests/discord/test_cards_on_a_phone.py); a forged client
    # sends it anyway.
    forged = copy.deepcopy(after.components)
    for row in forged:
        for button in row["components"]:
            if button["custom_id"].endswith(f":{wrong}"):
                button.update(label=letter, disabled=False)
    still_showing(after, forged)
    again = (await ann.click(after, label=letter)).response
    assert "already tried that option" in again.embeds[0].footer.text
    assert "used no attempt" in again.embeds[0].footer.text
    assert again.embeds[1].title == "Not quite. 2 attempts left."  # the verdict it had
    done = (await ann.click(after, label=letter_for(after, "split-batch-to-save-memory")))
    assert done.response.embeds[1].title == "Correct, on attempt 2."
