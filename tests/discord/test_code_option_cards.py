"""Cards whose options are code in Discord (issue 40, point 7; issue 41, point 8), for every
such card of the bundled deck: the card letters each loop (the first shown in full, each
other one as the lines where it differs from it), not "This loop", and ends on its question,
right above the buttons; a pick's verdict comes below the card as a message of its own,
naming the loop by its letter; a missed card reveals the key's letter and its code, and its
solution's steps on request. Every message fits a phone screen (PHONE_SCREEN), in every
order the options can be shown in."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import datetime

import pytest

from bot.discord_ui.render import PHONE_SCREEN, card_embed
from bot.engine import preview
from content.safe_text import code_block, markdown
from tests.helpers.code_options import CODE_OPTION_CARDS, DECK, alone
from tests.helpers.discord import final, letter_for
from tests.helpers.phone import labels, on_screen


@pytest.fixture(params=CODE_OPTION_CARDS)
def deck_library(request):
    """The bot plays one code-option card (each in turn): /practice serves it."""
    return alone(request.param)


def letters_in_order(card, message) -> list[tuple[str, object]]:
    """(letter, option) as this serve shows them, by the buttons."""
    by_letter = {letter_for(message, o.id): o for o in card.options}
    return sorted(by_letter.items())


async def test_a_code_option_card_letters_each_loop_and_asks_above_the_buttons(
        world, deck_library):
    _, channel, ann, _ = world
    (card,) = deck_library.cards()
    served = await ann.slash(channel, "practice")
    message = final(served)
    if served.followups:  # a first card's welcome did not fit above it: it came first
        assert served.response.content.startswith("👋 **Welcome!**")
        assert not served.response.embeds
    else:
        assert message.content.startswith("👋 **Welcome!**")
    text = message.embeds[0].description
    shown = letters_in_order(card, message)
    (first_letter, first), *others = shown
    assert text.startswith(f"**{first_letter}.**\n{code_block(first.code)}\n")
    for letter, option in others:  # a diff, or its loop where that would be shorter
        as_diff = f"\n**{letter}.** as **{first_letter}.** but:\n```diff\n" in text
        assert as_diff != (f"\n**{letter}.**\n{code_block(option.code)}\n" in text)
    assert "This loop" not in text  # the options' text tells none apart
    assert text.endswith(f"\n**{markdown(card.prompt)}**")  # the question, then the buttons
    assert labels(message)[:len(shown)] == [letter for letter, _ in shown]
    assert on_screen(message) <= PHONE_SCREEN, on_screen(message)


async def test_a_missed_code_option_card_names_letters_and_shows_the_keys_code(world,
                                                                             deck_library):
    _, channel, ann, _ = world
    (card,) = deck_library.cards()
    key = next(o for o in card.options if o.correct)
    message = final(await ann.slash(channel, "practice"))
    listed, key_letter = message.embeds[0].description, letter_for(message, key.id)
    wrong = [o for o in card.options if not o.correct][:3]
    for n, option in enumerate(wrong, 1):
        letter = letter_for(message, option.id)
        result = await ann.click(message, label=letter)
        message, told = result.response, result.followups[-1]
        assert told.ephemeral and len(told.embeds) == 1
        # The letter the learner clicked, as the card above lists it.
        assert told.embeds[0].description.startswith(f"**{letter}.** {markdown(option.says)}\n")
        assert on_screen(told) <= PHONE_SCREEN, on_screen(told)
        if n < len(wrong):
            assert told.embeds[0].title == f"Not quite. {3 - n} attempt{'s' * (n != 2)} left."
            # Before the last try: what the pick does and how to go on, not why (41.1).
            assert told.embeds[0].description.endswith("\n\nTry again, or press **Hint**.")
            assert "> **" not in told.embeds[0].description
            assert message.embeds[0].description == listed  # the card, to pick again
            assert on_screen(message) <= PHONE_SCREEN
    verdict = told.embeds[0]
    assert verdict.title == "Not this time."
    answer = f"**The answer:** **{key_letter}.** {markdown(key.text)}\n"
    assert answer + code_block(key.code) in verdict.description
    assert verdict.description.count("```") % 2 == 0
    # The answered card folds to its question; Next and the steps are under the verdict.
    assert message.embeds[0].description == f"**{markdown(card.prompt)}**"
    assert labels(message) == []
    assert labels(told) == ["Next card", "Why this is right"]
    steps = (await ann.click(told, label="Why this is right")).response
    assert steps.ephemeral
    assert steps.embeds[0].description.startswith(
        f"1. **{markdown(card.solution[0].title)}**: {markdown(card.solution[0].detail)}")
    assert on_screen(steps) <= PHONE_SCREEN, on_screen(steps)


def shown_as(card_id: str, order: tuple[str, ...]):
    card = DECK.card(card_id)
    return card, replace(preview(card.id, card.rev, datetime(2026, 12, 1)), order=order)


def test_every_order_of_a_code_option_card_fits_a_phone_screen():
    for card_id in CODE_OPTION_CARDS:
        every_order(card_id)


def every_order(card_id: str) -> None:
    card = DECK.card(card_id)
    for order in itertools.permutations([o.id for o in card.options]):
        embed = card_embed(*shown_as(card_id, order))
        assert len(embed.title) + len(embed.description) + len(embed.footer.text) \
            <= PHONE_SCREEN, order


def test_each_other_loop_is_the_lines_where_it_differs():
    order = ("step-and-clear-per-window", "never-clear", "clear-before-step",
             "clear-every-batch")
    text = card_embed(*shown_as("gradient-accumulation/correct-loop", order)).description
    assert text.startswith("**A.**\n```py\noptimizer.zero_grad()\n")
    assert "**B.** as **A.** but:\n```diff\n" \
           "  optimizer.step()\n" \
           "- optimizer.zero_grad()\n```" in text  # the indentation they share taken off
    assert "**C.** as **A.** but:\n```diff\n" \
           "  if (i + 1) % accumulati…\n" \
           "+     optimizer.zero_grad()\n" \
           "      optimizer.step()\n" \
           "-     optimizer.zero_grad()\n```" in text  # context lines cut short
    assert "**D.** as **A.** but:\n```diff\n" \
           "  loss = criterion(output…\n" \
           "+ optimizer.zero_grad()\n" \
           "  loss.backward()\n" \
           "…\n" \
           "      optimizer.step()\n" \
           "-     optimizer.zero_grad()\n```" in text  # "…" between its two parts
