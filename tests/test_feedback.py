"""What a learner is told, decided once for both front ends (`bot.engine.feedback`)."""

from __future__ import annotations

from datetime import date, timedelta

from bot.engine.feedback import feedback, numbered_code, when
from tests.helpers.records import RIGHT

TODAY = date(2026, 12, 2)


def test_a_wrong_attempt_with_attempts_left_reveals_nothing(tutor):
    served = tutor.next_card(tutor.learner("local:ann"))
    card = tutor.card(served)
    fb = feedback(card, tutor.answer(served, {"method": "step"}), TODAY)
    assert (fb.headline, fb.finished, fb.attempts_left) == ("Not quite.", False, 2)
    assert [(m.choice, m.blank, m.title) for m in fb.mistakes] == [("step", 1, "Wrong method")]
    assert fb.answer is None and fb.takeaway is None and fb.next_review is None


def test_the_last_wrong_attempt_reveals_the_answer_and_the_solution(tutor):
    served = tutor.next_card(tutor.learner("local:ann"))
    card = tutor.card(served)
    for _ in range(2):
        served = tutor.answer(served, {"method": "step"}).served
    fb = feedback(card, tutor.answer(served, {"method": "backward"}), TODAY)
    assert (fb.headline, fb.finished, fb.answer) == ("Not this time.", True, "zero_grad")
    assert fb.explanation == card.explanation and fb.takeaway == card.takeaway
    assert fb.next_review == "tomorrow"


def test_a_right_answer_says_on_which_attempt_and_when_next(tutor):
    served = tutor.next_card(tutor.learner("local:ann"))
    served = tutor.answer(served, {"method": "step"}).served
    fb = feedback(tutor.card(served), tutor.answer(served, RIGHT["mini/clear"]), TODAY)
    assert fb.headline == "Correct, on attempt 2." and fb.answer is None


def test_when_and_numbered_blanks_read_the_same_everywhere(tutor):
    assert [when(TODAY + timedelta(days=d), TODAY) for d in (-1, 0, 1, 6)] == [
        "today", "today", "tomorrow", "in 6 days (2026-12-08)"]
    card = tutor.card(tutor.next_card(tutor.learner("local:ann")))
    assert numbered_code(card).strip() == "optimizer.[1]()"
