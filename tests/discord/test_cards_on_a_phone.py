"""Option and fill-in cards as a learner plays them on a phone (issue 41, points 1, 3, 4),
through the real discord.py client: a wrong pick before the last try is told in one line
(its mistake's paragraph waits for the final verdict), a multi-blank card keeps its picks
and marks each blank, a wrong option cannot be pressed again, and a fill-in answer sent
again edits the card's line. Every message in these flows fits a phone screen."""

from __future__ import annotations

import pytest
from simcord import SetupError

from bot.discord_ui import render
from bot.discord_ui.render import PHONE_SCREEN, card_embed, feedback_embed
from bot.engine import has_code_options
from content.loader import DeckLibrary
from content.safe_text import markdown
from content.schema import ChoiceCard, FillInCard
from tests.helpers.discord import (
    choose,
    component,
    custom_ids,
    letter_for,
    pick_and_submit,
    served_id,
)
from tests.helpers.phone import on_screen

PURPOSE, ZERO_GRAD = "gradient-accumulation/purpose", "gradient-accumulation/zero-grad"
SCALE_LOSS = "gradient-accumulation/scale-loss"
RIGHT = "split-batch-to-save-memory"
WRONGS = ("combine-gpus", "state-memory", "scale-learning-rate")


@pytest.fixture(scope="module")
def deck():
    return DeckLibrary.load().deck("gradient-accumulation")


def says_line(letter: str, option) -> str:
    return f"**{letter}. {markdown(option.text)}**: {markdown(option.says)}"


def paragraph(mistake) -> str:
    return f"> **{markdown(mistake.title)}.** {markdown(mistake.explanation)}"


def buttons(message) -> dict[str, dict]:
    """The option buttons by option id."""
    return {c["custom_id"].rsplit(":", 1)[1]: c for row in message.components
            for c in row["components"] if c["custom_id"].startswith("srs:opt:")}


async def test_a_wrong_option_before_the_last_try_is_one_line_and_its_paragraph_comes_last(
        world, deck):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    options = {o.id: o for o in deck.card(PURPOSE).options}
    letters = {option: letter_for(card, option) for option in options}
    for left, wrong in zip((2, 1), WRONGS[:2], strict=True):
        letter = letters[wrong]
        card = (await choose(ann, card, wrong)).response
        verdict = card.embeds[1]
        assert verdict.title == f"Not quite. {left} attempt{'s' * (left != 1)} left."
        # What that pick does and how to go on: nothing of its mistake's paragraph.
        assert verdict.description == (f"{says_line(letter, options[wrong])}\n\n"
                                       "Try again, or press **Hint**.")
        assert on_screen(card) <= PHONE_SCREEN
    last = (await choose(ann, card, WRONGS[2])).response
    verdict = last.embeds[1]
    assert verdict.title == "Not this time."
    text = verdict.description
    mistakes = [deck.mistake(options[w].mistake) for w in WRONGS]
    # The paragraph, once: the last wrong pick's in full, the earlier picks' named.
    assert text.count(paragraph(mistakes[2])) == 1
    assert f"Your earlier picks:\n> **{markdown(mistakes[1].title)}.**\n" \
           f"> **{markdown(mistakes[0].title)}.**" in text
    assert mistakes[0].explanation not in text and mistakes[1].explanation not in text
    assert f"**The answer:** **{letters[RIGHT]}.**" in text


async def test_a_right_answer_after_a_wrong_one_explains_that_mistake_once(world, deck):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    wrong = (await pick_and_submit(ann, card, {"method": "step"})).response
    blank = deck.card(ZERO_GRAD).blanks[0]
    assert wrong.embeds[1].description == (f"**[1] `step`**: {markdown(blank.wrong['step'].says)}"
                                           "\n\nTry again, or press **Hint**.")
    assert on_screen(wrong) <= PHONE_SCREEN
    hinted = (await ann.click(wrong, label="Hint")).response
    again = (await pick_and_submit(ann, hinted, {"method": "backward"})).response
    assert again.embeds[1].description.endswith("\n\nTry again.")  # no hint left to press
    done = (await pick_and_submit(ann, again, {"method": "zero_grad"})).response
    text = done.embeds[1].description
    assert done.embeds[1].title == "Correct, on attempt 3."
    latest = deck.mistake(blank.wrong["backward"].mistake)
    assert text.startswith(f"Your earlier picks:\n{paragraph(latest)}\n"
                           f"> **{markdown(deck.mistake(blank.wrong['step'].mistake).title)}.**")
    assert text.count(markdown(latest.explanation)) == 1


async def test_a_multi_blank_card_keeps_its_picks_and_marks_each_blank(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loss-scaling")).response
    wrong = (await pick_and_submit(ann, card, {"divisor": "accumulation_steps",
                                               "method": "step"})).response
    divisor, method = (component(wrong, "srs:pick:", ":divisor"),
                       component(wrong, "srs:pick:", ":method"))
    # Each select keeps its pick, marked right or wrong in text.
    assert [(o["label"], o["value"]) for o in divisor["options"] if o["default"]] == [
        ("accumulation_steps ✅", "accumulation_steps")]
    assert [(o["label"], o["value"]) for o in method["options"] if o["default"]] == [
        ("step ❌", "step")]
    assert not divisor["disabled"] and not method["disabled"]
    assert sorted(o["label"] for o in method["options"]) == [
        "accumulation_samples", "accumulation_steps", "backward", "batch_size", "step ❌"]
    verdict = wrong.embeds[1].description
    assert "**[2] `step`**:" in verdict and "[1]" not in verdict
    assert verdict.endswith("Change each ❌ pick, then **Submit**. Your ✅ picks stay. "
                            "Stuck? Press **Hint**.")
    assert store.served.load(served_id(card)).draft == {"divisor": "accumulation_steps",
                                                        "method": "step"}
    assert on_screen(wrong) <= PHONE_SCREEN
    # Only the wrong blank gets a new pick; Submit answers with the kept one.
    done = (await pick_and_submit(ann, wrong, {"method": "backward"})).response
    assert done.embeds[1].title == "Correct, on attempt 2."
    assert custom_ids(done) == ["srs:next:learn"]  # a new card's


async def test_a_tried_option_is_marked_and_cannot_be_pressed_again(world):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    letters = {option: letter_for(card, option) for option in (RIGHT, *WRONGS)}
    after = (await choose(ann, card, WRONGS[0])).response
    shown = buttons(after)
    tried = shown[WRONGS[0]]
    assert (tried["label"], tried["disabled"]) == (f"{letters[WRONGS[0]]} ✗", True)
    assert all(not b["disabled"] and b["label"] == letters[o]
               for o, b in shown.items() if o != WRONGS[0])
    with pytest.raises(SetupError, match="disabled"):  # Discord's client would not send it
        await ann.click(after, label=f"{letters[WRONGS[0]]} ✗")
    second = (await ann.click(after, label=letters[WRONGS[1]])).response
    assert {o for o, b in buttons(second).items() if b["disabled"]} == set(WRONGS[:2])
    done = await ann.click(second, label=letters[RIGHT])
    assert done.response.embeds[1].title == "Correct, on attempt 3."


async def test_fill_in_picks_sent_again_edit_the_card_s_line(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loss-scaling")).response
    wrong = (await pick_and_submit(ann, card, {"divisor": "batch_size",
                                               "method": "backward"})).response
    verdict = wrong.embeds[1].description
    again = await ann.click(wrong, label="Submit")  # the kept picks, unchanged
    assert again.followups == [] and again.response.id == wrong.id  # no new message
    embed, kept = again.response.embeds
    assert embed.footer.text == (
        "2 attempts left\nYou already tried these picks on this card, and they are not "
        "right: try something else. This try used no attempt.")
    assert kept.description == verdict and kept.title == "Not quite. 2 attempts left."
    assert [o["label"] for o in component(again.response, "srs:pick:", ":divisor")["options"]
            if o["default"]] == ["batch_size ❌"]
    assert store.served.load(served_id(card)).attempts == 1
    assert on_screen(again.response) <= PHONE_SCREEN


def test_every_wrong_pick_before_the_last_try_is_told_in_a_few_phone_lines(tutor, library):
    """Each option and fill-in card of the bundled deck, every blank wrong at once: what the
    picks do and how to go on is a few lines, at most two fifths of a phone screen, and with
    the card still open above it fits one screen (before this, a pick's paragraph
    made it up to 61 lines of 36 characters)."""
    for n, card in enumerate(library.cards()):
        if isinstance(card, ChoiceCard):
            picks = [o.id for o in card.options if not o.correct]
        elif isinstance(card, FillInCard):
            picks = [{b.id: list(b.wrong)[i % len(b.wrong)] for b in card.blanks}
                     for i in range(2)]
        else:
            continue
        served = tutor.next_card(tutor.learner(f"local:{n}"), only=card.id, mode="practice")
        for pick in picks[:2]:
            verdict = tutor.answer(served, pick)
            served = verdict.served
            embed = feedback_embed(card, verdict, verdict.today)
            assert not verdict.finished and "> **" not in embed.description  # no paragraph
            assert render.on_screen(None, [embed]) <= PHONE_SCREEN * 2 // 5, card.id
            # A card whose options are code has its verdict below, a message of its own.
            shown = [[card_embed(card, served)], [embed]] if has_code_options(card) \
                else [[card_embed(card, served), embed]]
            assert all(render.on_screen(None, m) <= PHONE_SCREEN for m in shown), card.id
