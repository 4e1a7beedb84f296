"""A mistake's registry explanation is shown once per served card: after that (a later
attempt, a later blank of the same attempt) only its title and what the choice does
(`bot.engine.feedback`, both front ends)."""

from __future__ import annotations

from datetime import date

from bot.engine.feedback import feedback_of

TODAY = date(2026, 12, 2)
WRONG_METHOD = "That method does something else entirely."


def told(fb) -> list[tuple]:
    return [(m.blank, m.title, m.says, m.explanation, m.repeated) for m in fb.mistakes]


def test_the_same_mistake_in_two_blanks_is_explained_once(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/scale")
    card = tutor.card(served)
    # [1] backward and [2] accumulation_steps: both wrong_method in one attempt.
    verdict = tutor.answer(served, {"divisor": "backward", "call": "accumulation_steps"})
    assert told(feedback_of(card, verdict, TODAY)) == [
        (1, "Wrong method", "backward is a method, not a number.", WRONG_METHOD, False),
        (2, "Wrong method", "an int cannot be called.", "", True)]


def test_a_mistake_explained_on_an_earlier_attempt_is_only_named(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/scale")
    card = tutor.card(served)
    first = tutor.answer(served, {"divisor": "accumulation_steps", "call": "batch_size"})
    assert told(feedback_of(card, first, TODAY))[0][3] == WRONG_METHOD
    # Another attempt: wrong_method again (already explained), wrong_divisor is new.
    second = tutor.answer(first.served, {"divisor": "batch_size",
                                         "call": "accumulation_steps"})
    assert told(feedback_of(card, second, TODAY)) == [
        (1, "Wrong divisor", "batch_size is the micro-batch size.",
         "Divide by the number of accumulated micro-batches.", False),
        (2, "Wrong method", "an int cannot be called.", "", True)]


def test_two_options_on_one_mistake_explain_it_once(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/why")
    card = tutor.card(served)
    first = feedback_of(card, verdict := tutor.answer(served, "speed"), TODAY)
    second = feedback_of(card, tutor.answer(verdict.served, "memory"), TODAY)
    assert [m.explanation for m in first.mistakes] == [
        "Unscaled losses add up to gradients N times too large."]
    assert [(m.title, m.says, m.explanation, m.repeated) for m in second.mistakes] == [
        ("No scaling", "Scaling costs no memory.", "", True)]


def test_a_new_serve_of_the_card_explains_again(tutor):
    learner = tutor.learner("local:ann")
    for _ in range(2):
        served = tutor.next_card(learner, only="mini/why", mode="practice")
        fb = feedback_of(tutor.card(served), tutor.answer(served, "speed"), TODAY)
        assert not fb.mistakes[0].repeated and fb.mistakes[0].explanation
