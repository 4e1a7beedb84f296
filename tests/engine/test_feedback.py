"""What a learner is told, decided once for both front ends (`bot.engine.feedback`)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from bot.app import build
from bot.engine.feedback import LETTERS, answer_text, feedback_of, lettered, numbered_code, when
from content.loader import DeckLibrary
from content.safe_text import code_block
from tests.helpers.records import RIGHT

TODAY = date(2026, 12, 2)


def test_a_wrong_attempt_with_attempts_left_reveals_nothing(tutor):
    served = tutor.next_card(tutor.learner("local:ann"))
    card = tutor.card(served)
    fb = feedback_of(card, tutor.answer(served, {"method": "step"}), TODAY)
    assert (fb.headline, fb.finished, fb.attempts_left) == ("Not quite.", False, 2)
    assert [(m.choice, m.blank, m.says, m.title, m.explanation) for m in fb.mistakes] == [
        ("step", 1, "step() updates the weights.", "", "")]  # the explanation comes last
    assert fb.answer is None and fb.takeaway is None and fb.next_review is None


def test_the_last_wrong_attempt_reveals_the_answer_and_the_solution(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/scale")
    card = tutor.card(served)
    for call in ("batch_size", "accumulation_steps"):
        served = tutor.answer(served, {"divisor": "accumulation_steps", "call": call}).served
    fb = feedback_of(card, tutor.answer(served, {"divisor": "batch_size", "call": "batch_size"}),
                  TODAY)
    assert (fb.headline, fb.finished, fb.answer) == ("Not this time.", True,
                                                     "accumulation_steps, backward")
    assert fb.explanation == card.explanation and fb.takeaway == card.takeaway
    assert fb.next_review == "tomorrow"


def test_a_right_answer_says_on_which_attempt_and_when_next(tutor):
    served = tutor.next_card(tutor.learner("local:ann"))
    served = tutor.answer(served, {"method": "step"}).served
    fb = feedback_of(tutor.card(served), tutor.answer(served, RIGHT["mini/clear"]), TODAY)
    assert fb.headline == "Correct, on attempt 2." and fb.answer is None


def test_when_and_numbered_blanks_read_the_same_everywhere(tutor):
    assert [when(TODAY + timedelta(days=d), TODAY) for d in (-1, 0, 1, 6)] == [
        "today", "today", "tomorrow", "in 6 days (2026-12-08)"]
    card = tutor.card(tutor.next_card(tutor.learner("local:ann")))
    assert numbered_code(card).strip() == "optimizer.[1]()"


# -- code-option cards: "This loop" says nothing without its letter and code ---------------

CODE_OPTION_CARDS = [f"gradient-accumulation/{c}" for c in (
    "correct-loop", "scheduler-placement", "clip-placement", "amp-steps")]


@pytest.fixture(scope="module")
def bundled() -> DeckLibrary:
    return DeckLibrary.load()


@pytest.fixture
def bundled_tutor(db_url, bundled, clock):
    with build(database_url=db_url, library=bundled, clock=clock, sandbox=False) as app:
        yield app.tutor


def missed(tutor, card_id: str):
    """Serve `card_id` and miss it three times on different wrong options: the served card,
    {option id: letter as served} and each attempt's feedback."""
    served = tutor.next_card(tutor.learner("local:ann"), only=card_id)
    card = tutor.card(served)
    letters = {option.id: letter for letter, option in lettered(card, served)}
    wrong = [o.id for o in card.options if not o.correct][:3]
    assert len(wrong) == 3  # a wrong option picked again costs no attempt
    shown = []
    for option_id in wrong:
        verdict = tutor.answer(served, option_id)
        served = verdict.served
        shown.append(feedback_of(card, verdict, TODAY))
    return card, letters, wrong, shown


@pytest.mark.parametrize("card_id", CODE_OPTION_CARDS)
def test_a_missed_code_option_card_reveals_the_keys_letter_and_code(bundled_tutor, card_id):
    card, letters, wrong, shown = missed(bundled_tutor, card_id)
    key = next(o for o in card.options if o.correct)
    assert key.code and letters[key.id] in LETTERS[:len(card.options)]
    for fb, option_id in zip(shown, wrong, strict=True):
        assert [m.letter for m in fb.mistakes] == [letters[option_id]]  # as this serve showed
    *before, last = shown
    assert all(fb.answer_letter is None and fb.answer_code is None for fb in before)
    assert (last.finished, last.answer_letter, last.answer_code) == (
        True, letters[key.id], key.code)
    text = answer_text(last.answer, last.answer_is_code, last.answer_letter, last.answer_code)
    assert text.startswith(f"**The answer:** **{letters[key.id]}.** ")
    assert text.endswith(code_block(key.code)) and text.count("```") == 2


def test_a_text_option_card_reveals_its_letter_and_no_code(bundled_tutor):
    card, letters, wrong, shown = missed(bundled_tutor, "gradient-accumulation/purpose")
    assert not any(o.code for o in card.options)
    key = next(o for o in card.options if o.correct)
    assert (shown[-1].answer, shown[-1].answer_letter, shown[-1].answer_code) == (
        key.text, letters[key.id], None)
