"""Streaks: kept up to date by each review, in the learner's own study days."""

from __future__ import annotations

from datetime import date

import pytest

from bot.engine.reminders import current_streak
from tests.helpers.records import RIGHT

pytestmark = pytest.mark.postgres


def review_one(tutor, learner, mode="auto"):
    served = tutor.next_card(learner, mode=mode)
    return tutor.answer(served, RIGHT[served.card_id])


def test_consecutive_days_build_a_streak_and_a_gap_restarts_it(tutor, store, clock):
    learner = tutor.learner("local:ann")
    for _ in range(3):
        review_one(tutor, learner, mode="practice")
        clock.advance(days=1)
    person = store.learners.get(learner.id)
    assert (person.streak, person.longest_streak) == (3, 3)
    assert current_streak(person, date(2026, 12, 5)) == 3  # yesterday counted: still alive
    clock.advance(days=1)  # a whole day skipped
    assert current_streak(person, tutor.today(person)) == 0
    review_one(tutor, learner, mode="practice")
    person = store.learners.get(learner.id)
    assert (person.streak, person.longest_streak) == (1, 3)


def test_a_day_counts_once_the_daily_minimum_is_reached(tutor, store, clock):
    learner = tutor.learner("local:bo")
    store.learners.update(learner.id, daily_minimum=2)
    review_one(tutor, learner)
    assert store.learners.get(learner.id).streak == 0
    review_one(tutor, learner)
    review_one(tutor, learner)  # more reviews the same day add nothing
    person = store.learners.get(learner.id)
    assert (person.streak, person.day_reviews, person.streak_day) == (1, 3, date(2026, 12, 2))


def test_drills_and_cramming_do_not_count(tutor, store):
    learner = tutor.learner("local:cy")
    served = tutor.next_card(learner)
    first = tutor.answer(served, {"method": "step"})
    tutor.answer(first.served, RIGHT[served.card_id])  # graded: counts
    person = store.learners.get(learner.id)
    assert person.day_reviews == 1
    for _ in range(2):
        review_one(tutor, learner)
    drill = tutor.next_card(learner)
    assert drill.kind == "drill"
    tutor.answer(drill, RIGHT[drill.card_id])
    assert store.learners.get(learner.id).day_reviews == 3


def test_the_study_day_is_the_learners_own(tutor, store, clock):
    learner = tutor.learner("local:di")
    store.learners.update(learner.id, timezone="Asia/Tokyo")  # UTC+9, day starts 04:00
    learner = store.learners.get(learner.id)
    clock.now = clock.now.replace(hour=18, minute=30)  # 03:30 next day in Tokyo: still Dec 2
    review_one(tutor, learner, mode="practice")
    clock.advance(hours=1)  # 04:30 in Tokyo: Dec 3
    review_one(tutor, learner, mode="practice")
    person = store.learners.get(learner.id)
    assert (person.streak, person.streak_day) == (2, date(2026, 12, 3))
