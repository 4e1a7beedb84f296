"""Cards whose options are code in Discord (issue 40, point 7; issue 41, point 8), for every
such card of the bundled deck: the card letters each loop (one shown in full first, the one
that makes the card shortest, each other one as the lines where it differs from it), not
"This loop", and ends on its question, right above the buttons; a loop picked wrong folds
to its letter; a pick's verdict comes below the card as a message of its own, naming the
loop by its letter; a missed card reveals the key's letter and its code, and its solution's
steps on request. Every message fits a phone screen (PHONE_SCREEN), in every order the
options can be shown in, the hint shown too."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import datetime

import pytest

from bot.discord_ui import render
from bot.discord_ui.render import PHONE_SCREEN, card_embed
from bot.engine import preview
from bot.engine.feedback import code_diff
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
    full_letter, full = next((letter, o) for letter, o in shown
                             if text.startswith(f"**{letter}.**\n{code_block(o.code)}\n"))
    for letter, option in shown:  # a diff, or its loop where that would be shorter
        if option is not full:
            as_diff = f"\n**{letter}.** as **{full_letter}.** but:\n```diff\n" in text
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
            # The card, to pick again: the loop just tried folded to its letter.
            now = message.embeds[0].description
            assert f"**{letter}.** (tried: not this one)" in now and len(now) < len(listed)
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
    """Each order, before a pick and after each wrong one, the hint shown: as long in
    every order (only letters move), and within a phone screen."""
    card = DECK.card(card_id)
    wrong = [o.id for o in card.options if not o.correct]
    lengths = set()
    for order in itertools.permutations([o.id for o in card.options]):
        card, served = shown_as(card_id, order)
        lengths.add(len(card_embed(card, served).description))
        for tried in (wrong[:n] for n in range(3)):
            picked = replace(served, chosen=tuple(tried), hint_used=True)
            embed = card_embed(card, picked)
            assert embed.description.count("(tried: not this one)") == len(tried)
            assert render.on_screen(None, [embed]) <= PHONE_SCREEN, (order, tried)
    assert len(lengths) == 1, lengths


def test_each_other_loop_is_the_lines_where_it_differs():
    order = ("step-and-clear-per-window", "never-clear", "clear-before-step",
             "clear-every-batch")
    text = card_embed(*shown_as("gradient-accumulation/correct-loop", order)).description
    # B (never clearing) in full: each other loop then differs from it in one line.
    assert text.startswith("**B.**\n```py\noptimizer.zero_grad()\n")
    assert "```\n**A.** as **B.** but:\n```diff\n" \
           "  optimizer.step()\n" \
           "+ optimizer.zero_grad()\n```" in text  # the indentation they share taken off
    assert "**C.** as **B.** but:\n```diff\n" \
           "  if (i + 1) % accumulati…\n" \
           "+     optimizer.zero_grad()\n" \
           "      optimizer.step()\n```" in text  # context lines cut short
    assert "**D.** as **B.** but:\n```diff\n" \
           "  loss = criterion(output…\n" \
           "+ optimizer.zero_grad()\n" \
           "  loss.backward()\n```" in text
    assert text.index("**A.** as") < text.index("**C.** as") < text.index("**D.** as")
    first_in_full = code_diff("a\nb\nc\nd\ne\n", "x\nb\nc\nd\ny\n")
    assert first_in_full == "- a\n+ x\n  b\n…\n  d\n- e\n+ y"  # "…" between two parts
