"""The engine, driven as a front end drives it, with an injected clock."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, timedelta

import pytest

from bot.engine import CodeReport, InvalidAnswer, NeedsSandbox, RepeatedAnswer, Served, StaleCard
from bot.engine.judging import correct_answer
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary, parse_deck
from tests.helpers.engines import engine_of
from tests.helpers.paths import FIXTURES
from tests.helpers.records import RIGHT

pytestmark = pytest.mark.postgres

TODAY = date(2026, 12, 2)


def answer_all_correctly(tutor: Tutor, learner) -> list[str]:
    served_ids = []
    while served := tutor.next_card(learner):
        served_ids.append(served.card_id)
        assert tutor.answer(served, RIGHT[served.card_id]).correct
    return served_ids


def test_new_learner_gets_new_cards_in_deck_order_and_no_code_card(tutor):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    assert (served.card_id, served.kind, served.attempts) == ("mini/clear", "new", 0)
    assert answer_all_correctly(tutor, learner) == ["mini/clear", "mini/scale", "mini/why"]


def test_first_try_fast_answer_grades_5_and_schedules_tomorrow(tutor, store, clock):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    clock.advance(seconds=5)
    verdict = tutor.answer(served, RIGHT["mini/clear"])
    assert verdict.correct and verdict.finished and not verdict.findings
    assert (verdict.quality, verdict.interval, verdict.due) == (5, 1, TODAY + timedelta(1))
    log = store.reviews.get(served.serve_id)
    assert (log.kind, log.quality, log.attempts, log.hint_used) == ("new", 5, 1, False)
    assert log.latency_ms == 5000 and log.chosen == [{"method": "zero_grad"}]
    state = store.reviews.state(learner.id, "mini/clear")
    assert (state.ef100, state.repetitions, state.interval, state.due_day) == (
        260, 1, 1, TODAY + timedelta(1))


def test_slow_answers_grade_lower(tutor, clock):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    clock.advance(seconds=45)
    assert tutor.answer(served, RIGHT["mini/clear"]).quality == 4
    served = tutor.next_card(learner)
    clock.advance(minutes=5)
    assert tutor.answer(served, RIGHT["mini/scale"]).quality == 3


def test_wrong_chip_explains_its_own_mistake_without_revealing_the_answer(tutor, store):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    verdict = tutor.answer(served, {"method": "step"})
    assert not verdict.correct and not verdict.finished and verdict.attempts_left == 2
    (finding,) = verdict.findings
    assert finding.choice == "step" and finding.says == "step() updates the weights."
    assert finding.mistake_id == "wrong_method"
    assert finding.explanation == "That method does something else entirely."
    assert store.reviews.get(served.serve_id) is None  # nothing recorded mid-card
    other = tutor.answer(verdict.served, {"method": "backward"})
    assert other.findings[0].says == "backward() computes gradients."


def test_second_attempt_grades_1_and_is_drilled_the_same_day(tutor, store):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    first = tutor.answer(served, {"method": "step"})
    second = tutor.answer(first.served, RIGHT["mini/clear"])
    assert second.correct and second.finished and second.quality == 1
    log = store.reviews.get(served.serve_id)
    assert log.chosen == [{"method": "step"}, {"method": "zero_grad"}]
    assert log.mistake_ids == ["wrong_method"]
    for card_id in ("mini/scale", "mini/why"):
        served = tutor.next_card(learner)
        assert served.card_id == card_id
        tutor.answer(served, RIGHT[card_id])
    drill = tutor.next_card(learner)
    assert (drill.card_id, drill.kind) == ("mini/clear", "drill")
    before = store.reviews.state(learner.id, "mini/clear")
    verdict = tutor.answer(drill, RIGHT["mini/clear"])
    assert verdict.quality == 5
    after = store.reviews.state(learner.id, "mini/clear")
    # Rule 7: the drill is logged but leaves the SM-2 schedule alone.
    assert (after.ef100, after.interval, after.due_day, after.review_count) == (
        before.ef100, before.interval, before.due_day, before.review_count)
    assert not after.drill_pending and store.reviews.get(drill.serve_id).kind == "drill"
    assert tutor.next_card(learner) is None


def test_a_drill_below_4_is_drilled_again(tutor, clock):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner, mode="learn")
    tutor.answer(tutor.answer(served, {"method": "step"}).served, RIGHT["mini/clear"])
    for card_id in ("mini/scale", "mini/why"):
        tutor.answer(tutor.next_card(learner), RIGHT[card_id])
    drill = tutor.next_card(learner)
    clock.advance(minutes=3)  # very slow: quality 3
    assert tutor.answer(drill, RIGHT["mini/clear"]).quality == 3
    assert tutor.next_card(learner).kind == "drill"


def test_three_wrong_attempts_reveal_the_answer_and_grade_0(tutor, store, mini_library):
    learner = tutor.learner("local:ann")
    tutor.answer(tutor.next_card(learner), RIGHT["mini/clear"])
    served = tutor.next_card(learner)
    assert served.card_id == "mini/scale"
    wrong = {"divisor": "batch_size", "call": "backward"}
    v = tutor.answer(served, wrong)
    assert [f.blank for f in v.findings] == ["divisor"]  # only the wrong blank
    v = tutor.answer(v.served, {"divisor": "backward", "call": "batch_size"})
    assert [f.blank for f in v.findings] == ["divisor", "call"]
    v = tutor.answer(v.served, {"divisor": "batch_size", "call": "accumulation_steps"})
    assert v.finished and not v.correct and v.quality == 0 and v.attempts_left == 0
    assert correct_answer(mini_library.card("mini/scale")) == "accumulation_steps, backward"
    log = store.reviews.get(served.serve_id)
    assert log.attempts == 3 and log.mistake_ids == ["wrong_divisor", "wrong_method"]
    state = store.reviews.state(learner.id, "mini/scale")
    assert (state.repetitions, state.interval, state.lapses, state.ef100) == (0, 1, 1, 170)
    with pytest.raises(StaleCard):
        tutor.answer(v.served, RIGHT["mini/scale"])


def test_hint_caps_the_grade_at_2(tutor):
    learner = tutor.learner("local:ann")
    served, hint = tutor.hint(tutor.next_card(learner))
    assert hint == "Which method resets .grad?" and served.hint_used
    assert tutor.answer(served, RIGHT["mini/clear"]).quality == 2


def test_wrong_option_explains_the_mistake(tutor):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner, mode="practice", topic="scaling")
    while served.card_id != "mini/why":
        tutor.answer(served, RIGHT[served.card_id])
        served = tutor.next_card(learner, mode="practice", topic="scaling")
    verdict = tutor.answer(served, "speed")
    (finding,) = verdict.findings
    assert (finding.choice, finding.says, finding.mistake_id) == (
        "To train faster", "Scaling does not change speed.", "no_scaling")


def test_invalid_responses_use_no_attempt(tutor):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    for bad in ("zero_grad", {"method": "nope"}, {"other": "zero_grad"}, {}):
        with pytest.raises(InvalidAnswer):
            tutor.answer(served, bad)
    assert tutor.answer(served, RIGHT["mini/clear"]).quality == 5


def test_duplicate_answer_records_one_review(tutor, store):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    first = tutor.answer(served, RIGHT["mini/clear"])
    again = tutor.answer(served, RIGHT["mini/clear"])  # a double click
    assert again.duplicate and not first.duplicate
    assert (again.quality, again.due) == (first.quality, first.due)
    assert len(store.reviews.on_day(learner.id, TODAY)) == 1
    assert store.reviews.state(learner.id, "mini/clear").review_count == 1


def test_two_servings_of_one_card_record_only_the_first(tutor, store):
    learner = tutor.learner("local:ann")
    one, two = tutor.next_card(learner), tutor.next_card(learner)
    assert one.card_id == two.card_id and one.serve_id != two.serve_id
    tutor.answer(one, RIGHT["mini/clear"])
    with pytest.raises(StaleCard, match="already answered"):
        tutor.answer(two, RIGHT["mini/clear"])
    assert store.reviews.get(two.serve_id) is None


def edited_library(rev: int, content_rev: int) -> DeckLibrary:
    """The mini deck after an edit of mini/clear."""
    text = (FIXTURES / "mini.yaml").read_text().replace(
        "  - id: mini/clear\n    type: fill_in\n    rev: 1\n",
        f"  - id: mini/clear\n    type: fill_in\n    rev: {rev}\n    content_rev: {content_rev}\n")
    assert f"rev: {rev}" in text
    return DeckLibrary([parse_deck(text)])


def test_a_changed_or_removed_card_is_stale(tutor, store, clock):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    content_edit = Tutor(store, edited_library(2, 2), clock=clock)
    with pytest.raises(StaleCard, match="changed"):
        content_edit.answer(served, RIGHT["mini/clear"])
    typo_fix = Tutor(store, edited_library(2, 1), clock=clock)
    assert typo_fix.answer(served, RIGHT["mini/clear"]).correct  # still answerable
    assert store.reviews.state(learner.id, "mini/clear").card_rev == 2
    with pytest.raises(StaleCard, match="no longer"):
        tutor.answer(replace(served, card_id="mini/gone"), RIGHT["mini/clear"])


def test_a_typo_fix_keeps_progress_and_a_content_change_starts_over(store, mini_library,
                                                                   clock):
    tutor = Tutor(store, mini_library, clock=clock)
    learner = tutor.learner("local:ann")
    for _ in range(3):  # three reviews of mini/clear: interval 17 ahead
        served = tutor.next_card(learner, mode="practice", topic="basics")
        if served.kind == "cram":
            clock.advance(days=40)
            served = tutor.next_card(learner, mode="review")
        tutor.answer(served, RIGHT["mini/clear"])
    before = store.reviews.state(learner.id, "mini/clear")
    assert before.repetitions >= 2
    typo = Tutor(store, edited_library(2, 1), clock=clock)
    assert typo.next_card(learner, mode="review") is None or \
        typo.next_card(learner, mode="review").card_id != "mini/clear"
    content = Tutor(store, edited_library(3, 3), clock=clock)
    served = content.next_card(learner, mode="review")
    assert (served.card_id, served.kind, served.state.repetitions) == ("mini/clear", "review", 0)
    verdict = content.answer(served, RIGHT["mini/clear"])
    after = store.reviews.state(learner.id, "mini/clear")
    assert (verdict.interval, after.repetitions, after.card_rev) == (1, 1, 3)
    assert store.reviews.on_day(learner.id, clock.now.date())  # history kept


def test_code_cards_need_the_sandbox(tutor):
    learner = tutor.learner("local:ann")
    assert "mini/loop" not in [c.id for c in tutor.servable()]
    served = replace(tutor.next_card(learner), card_id="mini/loop")
    with pytest.raises(NeedsSandbox):
        tutor.answer(served, "for x in dataloader: pass")


def code_tutor(store, library, clock, report: CodeReport) -> Tutor:
    return Tutor(store, library, clock=clock, code_judge=lambda card, code, learner: report)


def test_a_failed_code_check_explains_each_mistake_and_records_it(store, mini_library, clock):
    tutor = code_tutor(store, mini_library, clock,
                       CodeReport("ok", False, ("no_scaling",), ("gradients 4x too large",)))
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner, topic="loop")
    assert served.card_id == "mini/loop"
    with pytest.raises(InvalidAnswer):
        tutor.answer(served, "   ")
    verdict = tutor.answer(served, "for x in dataloader: pass")
    assert verdict.finished and not verdict.correct and verdict.quality == 0
    (finding,) = verdict.findings
    assert (finding.mistake_id, finding.explanation) == (
        "no_scaling", "Unscaled losses add up to gradients N times too large.")
    assert verdict.report.feedback == ("gradients 4x too large",)
    log = store.reviews.get(served.serve_id)
    assert log.mistake_ids == ["no_scaling"]
    assert log.chosen == [{"status": "ok", "mistakes": ["no_scaling"], "retries": 0}]


def test_a_passed_code_check_grades_like_a_first_try(store, mini_library, clock):
    tutor = code_tutor(store, mini_library, clock, CodeReport("ok", True))
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner, topic="loop")
    clock.advance(minutes=4)  # writing a loop takes minutes
    verdict = tutor.answer(served, "for x in dataloader: pass")
    assert verdict.correct and verdict.quality == 5 and not verdict.findings


def test_a_crashed_submission_says_so(store, mini_library, clock):
    report = CodeReport("error", False, (), ("line 3: NameError: name 'lossy' is not defined",))
    tutor = code_tutor(store, mini_library, clock, report)
    served = tutor.next_card(tutor.learner("local:ann"), topic="loop")
    verdict = tutor.answer(served, "lossy.backward()")
    assert verdict.finished and not verdict.correct and verdict.findings == ()
    assert verdict.report.status == "error" and "NameError" in verdict.report.feedback[0]


def test_served_cards_survive_a_json_round_trip(tutor):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    served = tutor.answer(served, {"method": "step"}).served
    served, _ = tutor.hint(served)
    again = Served.from_json(json.loads(json.dumps(served.to_json())))
    assert again == served
    assert tutor.answer(again, RIGHT["mini/clear"]).quality == 1


def test_reviews_follow_sm2_and_most_overdue_comes_first(tutor, store, clock):
    learner = tutor.learner("local:ann")
    answer_all_correctly(tutor, learner)
    assert tutor.next_card(learner) is None
    assert tutor.progress(learner).next_due == TODAY + timedelta(1)
    clock.advance(days=1)
    served = tutor.next_card(learner)
    assert served.kind == "review"
    tutor.answer(served, RIGHT[served.card_id])  # interval 6 now
    clock.advance(days=3)
    due = []
    while served := tutor.next_card(learner):
        due.append(served.card_id)
        tutor.answer(served, RIGHT[served.card_id])
    # The card reviewed on day 1 is next due on day 7; the other two have been due since.
    assert sorted(due) == ["mini/scale", "mini/why"]
    clock.advance(days=30)
    intervals = []
    for _ in range(3):
        while served := tutor.next_card(learner):
            v = tutor.answer(served, RIGHT[served.card_id])
            if served.card_id == "mini/clear":
                intervals.append(v.interval)
        clock.advance(days=200)
    assert intervals == [17, 48, 140]  # the SM-2 golden vector for grades 5,5,5,5,5


def test_most_overdue_first(tutor, store, clock):
    learner = tutor.learner("local:ann")
    for card_id in ("mini/clear", "mini/scale", "mini/why"):
        served = tutor.next_card(learner, mode="learn")
        assert served.card_id == card_id
        tutor.answer(served, RIGHT[card_id])
        clock.advance(days=1)  # each card due one day after the previous
    clock.advance(days=5)
    order = []
    while served := tutor.next_card(learner, mode="review"):
        order.append(served.card_id)
        tutor.answer(served, RIGHT[served.card_id])
    assert order == ["mini/clear", "mini/scale", "mini/why"]


def test_daily_new_card_limit_resets_on_the_next_study_day(tutor, store, clock):
    learner = tutor.learner("local:ann")
    store.learners.update(learner.id, new_per_day=2, timezone="Europe/Berlin")
    learner = store.learners.get(learner.id)
    assert answer_all_correctly(tutor, learner) == ["mini/clear", "mini/scale"]
    assert tutor.progress(learner).new_left_today == 0
    clock.now = clock.now.replace(hour=2, minute=59) + timedelta(days=1)  # 03:59 Berlin
    assert tutor.next_card(learner, mode="learn") is None
    clock.advance(minutes=1)  # 04:00 Berlin: a new study day
    assert tutor.next_card(learner, mode="learn").card_id == "mini/why"


def test_practice_serves_a_card_when_nothing_is_due_without_moving_the_schedule(tutor, store):
    learner = tutor.learner("local:ann")
    answer_all_correctly(tutor, learner)
    assert tutor.next_card(learner) is None
    before = {s.card_id: s for s in store.reviews.states(learner.id)}
    served = tutor.next_card(learner, mode="practice", topic="scaling")
    assert served.kind == "cram" and served.card_id in {"mini/scale", "mini/why"}
    tutor.answer(served, RIGHT[served.card_id])
    assert store.reviews.state(learner.id, served.card_id) == before[served.card_id]
    assert store.reviews.get(served.serve_id).kind == "cram"


def test_timezone_decides_the_study_day(tutor, store, clock):
    learner = tutor.learner("local:kiri")
    store.learners.update(learner.id, timezone="Pacific/Kiritimati")  # UTC+14
    learner = store.learners.get(learner.id)
    clock.advance(hours=4)  # 16:00 UTC is 06:00 on Dec 3 in Kiritimati, past the rollover
    served = tutor.next_card(learner)
    verdict = tutor.answer(served, RIGHT[served.card_id])
    assert store.reviews.get(served.serve_id).study_day == date(2026, 12, 3)
    assert verdict.due == date(2026, 12, 4)


def test_guild_answers_record_membership(tutor, store):
    learner = tutor.learner("discord:42")
    served = tutor.next_card(learner, guild_id=1234567890123456789)
    tutor.answer(served, RIGHT[served.card_id])
    assert store.reviews.get(served.serve_id).guild_id == 1234567890123456789


def test_canonical_deck_answers_through_the_engine(store, clock):
    library = DeckLibrary.load()
    tutor = Tutor(store, library, clock=clock)
    learner = tutor.learner("local:real")
    seen = 0
    while served := tutor.next_card(learner, mode="learn"):
        card = tutor.card(served)
        wrong = (
            next(o.id for o in card.options if not o.correct) if card.type == "multiple_choice"
            else {b.id: next(iter(b.wrong)) for b in card.blanks}
        )
        right = (
            next(o.id for o in card.options if o.correct) if card.type == "multiple_choice"
            else {b.id: b.answer for b in card.blanks}
        )
        verdict = tutor.answer(served, wrong)
        assert verdict.findings and all(f.says and f.explanation for f in verdict.findings)
        assert tutor.answer(verdict.served, right).quality == 1
        seen += 1
    assert seen == 10  # every fill-in and MCQ; the code card needs the sandbox


def test_a_wrong_answer_tried_again_costs_no_attempt(tutor, store):
    """Picking a known-wrong option (or the same wrong picks) again teaches nothing; it is
    refused with words saying so, stored nowhere, and the attempts stay."""
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner, only="mini/clear")
    served = tutor.answer(served, {"method": "step"}).served
    with pytest.raises(RepeatedAnswer, match="already tried these picks.*used no attempt"):
        tutor.answer(served, {"method": "step"})
    verdict = tutor.answer(served, {"method": "backward"})  # another wrong chip counts
    assert (verdict.served.attempts, verdict.attempts_left) == (2, 1)
    assert tutor.answer(verdict.served, RIGHT["mini/clear"]).finished
    why = tutor.next_card(learner, only="mini/why", mode="practice")
    why = tutor.answer(why, "speed").served
    with pytest.raises(RepeatedAnswer, match="already tried that option"):
        tutor.answer(why, "speed")
    assert tutor.answer(why, "average").quality == 1  # the second attempt, as it was


def test_a_repeated_click_through_served_cards_leaves_the_stored_card(tutor):
    play, ann = engine_of(tutor).cards, tutor.learner("discord:1")
    playing = play.serve(ann, card_id="mini/why", mode="practice")
    first = play.answer(playing.served.serve_id, 0, ann, "speed")
    with pytest.raises(RepeatedAnswer):
        play.answer(playing.served.serve_id, 1, ann, "speed")
    assert play.current(playing.served.serve_id, ann).served == first.served
    assert play.answer(playing.served.serve_id, 1, ann, "average").correct
