"""Before a card's last try a wrong pick is told in one line, what it does (its whole
explanation would give the answer away while tries are left); the explanations go into
the final verdict, each mistake once (`bot.engine.feedback`, both front ends)."""

from __future__ import annotations

from datetime import date

from bot.engine.feedback import feedback_of

TODAY = date(2026, 12, 2)
WRONG_METHOD = "That method does something else entirely."
WRONG_DIVISOR = "Divide by the number of accumulated micro-batches."
NO_SCALING = "Unscaled losses add up to gradients N times too large."


def told(fb) -> list[tuple]:
    return [(m.blank, m.title, m.says, m.explanation, m.repeated) for m in fb.mistakes]


def earlier(fb) -> list[tuple]:
    return [(m.title, m.explanation) for m in fb.earlier]


def test_a_wrong_pick_before_the_last_try_says_only_what_it_does(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/scale")
    card = tutor.card(served)
    first = tutor.answer(served, {"divisor": "backward", "call": "accumulation_steps"})
    fb = feedback_of(card, first, TODAY)
    assert told(fb) == [(1, "", "backward is a method, not a number.", "", False),
                        (2, "", "an int cannot be called.", "", False)]
    assert (fb.earlier, fb.hint_left, fb.answer, fb.explanation) == ((), True, None, "")
    hinted, _ = tutor.hint(first.served)
    second = feedback_of(card, tutor.answer(hinted, {"divisor": "batch_size",
                                                      "call": "backward"}), TODAY)
    assert told(second) == [(1, "", "batch_size is the micro-batch size.", "", False)]
    assert not second.hint_left  # the hint was used: nothing to press


def test_the_same_mistake_in_two_blanks_of_the_last_try_is_explained_once(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/scale")
    card = tutor.card(served)
    for picks in ({"divisor": "batch_size", "call": "backward"},
                  {"divisor": "batch_size", "call": "batch_size"}):
        served = tutor.answer(served, picks).served
    last = feedback_of(card, tutor.answer(served, {"divisor": "backward",
                                                   "call": "accumulation_steps"}), TODAY)
    assert last.finished and told(last) == [
        (1, "Wrong method", "backward is a method, not a number.", WRONG_METHOD, False),
        (2, "Wrong method", "an int cannot be called.", "", True)]
    # The earlier attempts' other mistake is named, not explained: a phone screen.
    assert earlier(last) == [("Wrong divisor", "")]


def test_a_right_answer_after_a_wrong_one_explains_that_mistake(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/why")
    card = tutor.card(served)
    first = tutor.answer(served, "speed")
    assert told(feedback_of(card, first, TODAY)) == [
        (None, "", "Scaling does not change speed.", "", False)]
    right = feedback_of(card, tutor.answer(first.served, "average"), TODAY)
    assert right.correct and right.mistakes == ()
    assert earlier(right) == [("No scaling", NO_SCALING)]


def test_only_the_last_wrong_attempt_is_explained_in_full(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/scale")
    card = tutor.card(served)
    served = tutor.answer(served, {"divisor": "batch_size", "call": "backward"}).served
    served = tutor.answer(served, {"divisor": "accumulation_steps",
                                   "call": "batch_size"}).served
    right = feedback_of(card, tutor.answer(served, {"divisor": "accumulation_steps",
                                                    "call": "backward"}), TODAY)
    assert earlier(right) == [("Wrong method", WRONG_METHOD), ("Wrong divisor", "")]


def test_two_options_on_one_mistake_explain_it_once(tutor):
    served = tutor.next_card(tutor.learner("local:ann"), only="mini/why")
    card = tutor.card(served)
    verdict = tutor.answer(tutor.answer(served, "speed").served, "memory")
    last = feedback_of(card, tutor.answer(verdict.served, "average"), TODAY)
    assert earlier(last) == [("No scaling", NO_SCALING)]
