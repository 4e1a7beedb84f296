"""Served cards kept in the store (`bot.engine.served_cards`): from serve to review, and
learners' settings (`bot.engine.learners`), driven as the Discord layer drives them."""

from __future__ import annotations

import pytest

from bot.engine import AlreadyCounted, BadSetting, Finished, Gone, InvalidAnswer, NotYours
from bot.engine.served_cards import ServedCards
from bot.engine.tutor import Tutor
from scheduler.storage.db import downgrade, make_engine, upgrade
from scheduler.storage.store import Store
from tests.helpers.engines import engine_of

pytestmark = pytest.mark.postgres

RIGHT = {"method": "zero_grad"}


@pytest.fixture
def play(tutor) -> ServedCards:
    return engine_of(tutor).cards


def served_clear(play, tutor):
    ann = tutor.learner("discord:1")
    playing = play.serve(ann)
    assert playing.served.card_id == "mini/clear"
    return ann, playing.served.serve_id


@pytest.fixture
def elsewhere(db_url, deck_library, clock):
    """The same served cards played from another bot process (its own store)."""
    other = Tutor(Store(make_engine(db_url)), deck_library, clock=clock)
    yield engine_of(other).cards
    other.store.close()
    other.store.engine.dispose()


def served_why(play, tutor, who: str = "discord:1"):
    """A multiple-choice card (mini/why: "average" is right), kept by `play` as served."""
    learner = tutor.learner(who)
    playing = play.serve(learner, card_id="mini/why")
    assert playing.served.card_id == "mini/why"
    return learner, playing.served.serve_id


def test_a_hint_shown_by_another_process_caps_a_click_judged_here(play, elsewhere, tutor,
                                                                    store):
    ann, sid = served_why(play, tutor)
    elsewhere.hint(sid, 0, ann)
    verdict = play.answer(sid, 0, ann, "average")
    assert verdict.correct and verdict.finished and verdict.quality == 2  # the hint's cap
    assert store.reviews.get(sid).hint_used


def test_a_click_after_another_process_moved_the_card_is_judged_as_stored(play, elsewhere,
                                                                          tutor, store):
    ann, sid = served_why(play, tutor)
    elsewhere.answer(sid, 0, ann, "speed")
    with pytest.raises(AlreadyCounted):  # the rendering this process showed is outdated
        play.answer(sid, 0, ann, "memory")
    verdict = play.answer(sid, 1, ann, "average")
    assert verdict.correct and verdict.served.chosen == ("speed", "average")
    assert store.reviews.get(sid).attempts == 2


def test_a_card_finished_or_forgotten_elsewhere_takes_no_click_here(play, elsewhere, tutor,
                                                                   store):
    ann, sid = served_why(play, tutor)
    first = elsewhere.answer(sid, 0, ann, "average")
    with pytest.raises(Finished):
        play.answer(sid, 0, ann, "speed")
    assert store.reviews.get(sid).quality == first.quality
    bob, other = served_why(play, tutor, "discord:2")
    engine_of(elsewhere.tutor).learners.forget(bob)
    with pytest.raises(Gone):
        play.answer(other, 0, bob, "average")
    assert store.reviews.get(other) is None


def test_a_card_hinted_before_the_hint_was_a_move_stays_answerable(play, tutor, store,
                                                                   engine):
    ann, sid = served_why(play, tutor)
    play.hint(sid, 0, ann)
    assert store.served.load(sid).attempts == 1  # the hint is one of its moves
    downgrade(engine, "0008")
    assert store.served.load(sid).attempts == 0  # as stored before revision 0009
    upgrade(engine)
    verdict = engine_of(tutor).cards.answer(sid, 0, ann, "average")  # a process started since
    assert verdict.finished and verdict.quality == 2


def test_a_double_click_on_a_kept_card_counts_once(play, tutor, store):
    ann, sid = served_why(play, tutor)
    wrong = play.answer(sid, 0, ann, "speed")
    with pytest.raises(AlreadyCounted):
        play.answer(sid, 0, ann, "memory")
    assert store.served.load(sid).attempts == wrong.served.attempts == 1


def test_a_finished_answer_is_one_transaction_a_crash_leaves_nothing_half_written(
        play, tutor, store, monkeypatch):
    ann, sid = served_clear(play, tutor)

    def crash(cursor, values):
        raise RuntimeError("power cut between judging and recording")

    with monkeypatch.context() as patched:  # the served card moves first; then the crash
        patched.setattr(store, "_write_state", crash)
        with pytest.raises(RuntimeError):
            play.answer(sid, 0, ann, RIGHT)
    row = store.served.load(sid)
    assert (row.attempts, row.finished) == (0, False)
    assert store.reviews.get(sid) is None and store.reviews.state(ann.id, "mini/clear") is None
    verdict = play.answer(sid, 0, ann, RIGHT)  # the same click, retried, still counts
    assert verdict.correct and verdict.finished
    assert store.served.load(sid).finished and store.reviews.get(sid).quality == verdict.quality


def test_the_second_of_two_clicks_on_the_last_attempt_changes_nothing(play, tutor, store):
    ann, sid = served_clear(play, tutor)
    playing = play.at(sid, 0, ann)  # both clicks loaded the card at attempt 0
    first = tutor.answer(playing.served, RIGHT, stored=True)
    with pytest.raises(AlreadyCounted):
        tutor.answer(playing.served, {"method": "step"}, stored=True)
    assert store.reviews.get(sid).quality == first.quality and store.reviews.get(sid).correct


def test_clicks_are_checked_against_owner_attempt_and_state(play, tutor):
    ann, sid = served_clear(play, tutor)
    bob = tutor.learner("discord:2")
    with pytest.raises(NotYours):
        play.answer(sid, 0, bob, RIGHT)
    with pytest.raises(Gone):
        play.answer("0" * 16, 0, ann, RIGHT)
    play.answer(sid, 0, ann, {"method": "step"})
    with pytest.raises(AlreadyCounted):
        play.answer(sid, 0, ann, RIGHT)  # rendered for attempt 0, now at 1
    play.answer(sid, 1, ann, RIGHT)
    with pytest.raises(Finished):
        play.answer(sid, 2, ann, RIGHT)


@pytest.mark.parametrize("blank, chip", [("nope", "zero_grad"), ("method", "nope"),
                                         ("method", ""), ("", "")])
def test_a_pick_the_card_does_not_have_is_refused_and_stores_nothing(play, tutor, store,
                                                                    blank, chip):
    ann, sid = served_clear(play, tutor)
    with pytest.raises(InvalidAnswer):
        play.pick(sid, ann, blank, chip)
    assert store.served.load(sid).draft == {}
    play.pick(sid, ann, "method", "zero_grad")
    assert play.submit(sid, 0, ann).correct


def test_a_submit_with_an_empty_blank_names_it(play, tutor):
    ann, sid = served_clear(play, tutor)
    with pytest.raises(InvalidAnswer, match=r"blank \[1\]"):
        play.submit(sid, 0, ann)


def test_only_code_cards_open_the_code_editor(play, tutor):
    ann, sid = served_clear(play, tutor)
    with pytest.raises(InvalidAnswer, match="not answered with code"):
        play.code_card(sid, 0, ann)


def test_a_hint_is_stored_and_keeps_the_picks_made_so_far(play, tutor, store):
    ann, sid = served_clear(play, tutor)
    play.pick(sid, ann, "method", "zero_grad")
    assert play.hint(sid, 0, ann).served.hint_used
    row = store.served.load(sid)
    assert row.served["hint_used"] and row.draft == {"method": "zero_grad"}
    assert play.submit(sid, 0, ann).correct  # the pick made before the hint still counts


# -- settings ------------------------------------------------------------------------------
@pytest.mark.parametrize("changes", [
    {"reminder_hour": 25}, {"reminder_hour": -1}, {"new_per_day": -5}, {"new_per_day": 0},
    {"quiet_start": -3, "quiet_end": 99}, {"daily_minimum": 101}, {"reminder_hour": True},
    {"reminder_hour": "7"}, {"reminders_enabled": "yes"}, {"timezone": "Mars/Olympus"},
    {"reminders_enabled": True, "quiet_start": 30},
])
def test_a_bad_setting_is_refused_and_changes_nothing(tutor, store, changes):
    learners = engine_of(tutor).learners
    ann = tutor.learner("discord:1")
    with pytest.raises(BadSetting):
        learners.update_settings(ann, changes)
    after = store.learners.get(ann.id)
    assert after == ann and after.next_reminder_at is None


def test_turning_reminders_on_schedules_the_next_one_in_the_same_write(tutor, store):
    ann = tutor.learner("discord:1")
    after = engine_of(tutor).learners.update_settings(ann, {"reminders_enabled": True,
                                                  "reminder_hour": 20, "timezone": "UTC"})
    assert after.reminders_enabled and after.next_reminder_at is not None
    assert after.next_reminder_at.hour == 20
