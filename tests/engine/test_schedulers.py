"""FSRS beside SM-2 in the engine: both states move with every review, the scheduler in
force (learner, else server, else default) decides the due day, and the states always equal
what the review log replays to, so switching and switching back loses nothing."""

from __future__ import annotations

import importlib.util
import json
import random
from datetime import date, datetime, timedelta

import pytest
import sqlalchemy as sa
from fsrs import Rating

from bot.engine import BadSetting, Served
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary, parse_deck
from scheduler.choice import DEFAULT_SCHEDULER, DUE_KEYS, SchedulerName, ServerChoice, resolve
from scheduler.fsrs_review import FSRSState, rating_for, review_card_fsrs, review_fsrs
from scheduler.replay import LoggedReview, backfill_fsrs, replay, replayed_states
from scheduler.storage.db import MIGRATIONS_DIR, downgrade, upgrade
from scheduler.storage.models import CardState, ReviewLog
from tests.helpers.engines import engine_of
from tests.helpers.paths import FIXTURES
from tests.helpers.records import RIGHT

pytestmark = pytest.mark.postgres

TODAY = date(2026, 12, 2)
WRONG = {"mini/clear": {"method": "step"},
         "mini/scale": {"divisor": "batch_size", "call": "backward"},
         "mini/why": "speed"}
GUILD, OTHER_GUILD = 111, 222


def test_ratings_follow_the_same_pass_line_as_sm2():
    assert [rating_for(q) for q in range(6)] == [
        Rating.Again, Rating.Again, Rating.Again, Rating.Hard, Rating.Good, Rating.Good]
    with pytest.raises(ValueError):
        rating_for(6)


def test_fsrs_review_counts_whole_study_days_and_never_goes_backwards():
    first, interval = review_fsrs(None, 5, TODAY)
    assert interval >= 1 and first.last_day == TODAY
    again, _ = review_fsrs(first, 0, TODAY + timedelta(days=interval))
    assert again.stability < first.stability  # a lapse never raises stability
    # A calendar moved back a day: the same day as the last review, not an error.
    moved, _ = review_fsrs(first, 4, TODAY - timedelta(days=1))
    assert moved.last_day == TODAY
    # Deterministic (no fuzz): the log replays to the same state every time.
    assert review_fsrs(first, 4, TODAY + timedelta(days=3)) == review_fsrs(
        first, 4, TODAY + timedelta(days=3))


def test_replay_starts_over_at_a_restart_and_skips_drills():
    logged = [LoggedReview("new", 5, TODAY), LoggedReview("drill", 0, TODAY),
              LoggedReview("review", 4, TODAY + timedelta(days=1)),
              LoggedReview("remedy", 0, TODAY + timedelta(days=2)),
              LoggedReview("cram", 0, TODAY + timedelta(days=2))]
    plain = replay(logged[:1] + logged[2:3])
    assert replay(logged) == plain
    restarted = replay([*logged, LoggedReview("review", 5, TODAY + timedelta(days=9),
                                              restart=True)])
    fresh = replay([LoggedReview("new", 5, TODAY + timedelta(days=9))])
    assert (restarted.sm2, restarted.fsrs, restarted.lapses) == (fresh.sm2, fresh.fsrs, 0)


def play_days(tutor: Tutor, clock, learner, days: int, seed: int, **where) -> None:
    """Study ``days`` days, answering right, wrong or slowly at random (seeded)."""
    rng = random.Random(seed)
    for _ in range(days):
        while served := tutor.next_card(learner, **where):
            if rng.random() < 0.2:
                served, _ = tutor.hint(served)
            clock.advance(seconds=rng.choice((5, 30, 90)))
            verdict = tutor.answer(served, WRONG[served.card_id] if rng.random() < 0.3
                                   else RIGHT[served.card_id])
            while not verdict.finished:
                verdict = tutor.answer(verdict.served, RIGHT[served.card_id])
        clock.advance(days=1)


def assert_states_replay_from_the_log(store, learner_id: int) -> None:
    with store.engine.connect() as conn:
        replayed = replayed_states(conn, sa.column("learner_id") == learner_id)
    states = store.reviews.states(learner_id)
    assert states
    for s in states:
        r = replayed[(learner_id, s.card_id)]
        assert (s.ef100, s.repetitions, s.interval, s.due_day, s.lapses) == (
            r.sm2.ef100, r.sm2.repetitions, r.sm2.interval, r.sm2_due, r.lapses)
        assert FSRSState(s.fsrs_stability, s.fsrs_difficulty, s.last_review_day) == r.fsrs
        assert s.fsrs_due_day == r.fsrs_due


@pytest.mark.parametrize("scheduler", ["sm2", "fsrs"])
def test_both_states_always_equal_what_the_log_replays_to(tutor, store, clock, scheduler):
    learner = engine_of(tutor).learners.update_settings(tutor.learner("local:ann"),
                                              {"scheduler": scheduler})
    play_days(tutor, clock, learner, 40, seed=7)
    assert_states_replay_from_the_log(store, learner.id)


def test_the_scheduler_in_force_says_when_and_logs_which(tutor, store, clock):
    learner = tutor.learner("local:ann")
    served = tutor.next_card(learner)
    assert served.scheduler == DEFAULT_SCHEDULER
    learner = engine_of(tutor).learners.update_settings(learner, {"scheduler": "fsrs"})
    served = tutor.next_card(learner)
    clock.advance(seconds=5)
    verdict = tutor.answer(served, RIGHT[served.card_id])
    state = store.reviews.state(learner.id, served.card_id)
    assert verdict.due == state.fsrs_due_day and verdict.interval == (
        state.fsrs_due_day - TODAY).days
    log = store.reviews.get(served.serve_id)
    assert (log.scheduler, log.due_day_after) == ("fsrs", state.fsrs_due_day)
    assert log.ef100_after == state.ef100  # SM-2 moved as well
    # A repeated answer reports what was told the first time.
    assert tutor.answer(served, RIGHT[served.card_id]).due == state.fsrs_due_day


def test_switching_and_switching_back_keeps_every_schedule(tutor, store, clock):
    learners = engine_of(tutor).learners
    learner = tutor.learner("local:ann")
    play_days(tutor, clock, learner, 20, seed=3)
    before = {s.card_id: (s.due_day, s.fsrs_due_day, s.review_count)
              for s in store.reviews.states(learner.id)}
    logs = len(store.reviews.on_day(learner.id, tutor.today(learner)))
    sm2_due = tutor.progress(learner).next_due
    learner = learners.update_settings(learner, {"scheduler": "fsrs"})
    fsrs_due = tutor.progress(learner).next_due
    assert fsrs_due == min(d for _, d, _ in before.values() if d > tutor.today(learner))
    learner = learners.update_settings(learner, {"scheduler": "sm2"})
    assert tutor.progress(learner).next_due == sm2_due
    assert {s.card_id: (s.due_day, s.fsrs_due_day, s.review_count)
            for s in store.reviews.states(learner.id)} == before
    assert len(store.reviews.on_day(learner.id, tutor.today(learner))) == logs
    # And studying on under FSRS keeps both in step with the log.
    learner = learners.update_settings(learner, {"scheduler": "fsrs"})
    play_days(tutor, clock, learner, 20, seed=4)
    assert_states_replay_from_the_log(store, learner.id)


def test_the_server_chooses_unless_the_learner_did(tutor, store, clock):
    servers, learners = engine_of(tutor).servers, engine_of(tutor).learners
    servers.set_scheduler(GUILD, "fsrs")
    learner = tutor.learner("discord:1")
    assert tutor.next_card(learner, guild_id=GUILD).scheduler == "fsrs"
    clock.advance(minutes=1)
    assert tutor.next_card(learner, guild_id=OTHER_GUILD).scheduler == DEFAULT_SCHEDULER
    # Outside a server (DMs, reminders): the server they used most recently.
    assert tutor.choice(learner).scheduler == DEFAULT_SCHEDULER  # OTHER_GUILD was last
    clock.advance(minutes=1)
    tutor.next_card(learner, guild_id=GUILD)
    assert tutor.choice(learner).scheduler == "fsrs"
    learner = learners.update_settings(learner, {"scheduler": "sm2"})
    assert tutor.next_card(learner, guild_id=GUILD).scheduler == "sm2"
    learner = learners.update_settings(learner, {"scheduler": None})  # follow the server
    assert tutor.next_card(learner, guild_id=GUILD).scheduler == "fsrs"
    # A one-off choice (the terminal's --scheduler) beats both.
    assert tutor.next_card(learner, guild_id=GUILD, scheduler="sm2").scheduler == "sm2"


def test_bad_scheduler_choices_are_refused_and_change_nothing(tutor):
    learner = tutor.learner("local:ann")
    with pytest.raises(BadSetting, match="sm2, fsrs"):
        engine_of(tutor).learners.update_settings(learner, {"scheduler": "anki"})
    with pytest.raises(Exception, match="sm2, fsrs"):
        engine_of(tutor).servers.set_scheduler(GUILD, "leitner")
    assert tutor.learner("local:ann").scheduler is None
    assert engine_of(tutor).servers.settings(GUILD).scheduler is None


def test_cards_reviewed_before_fsrs_get_their_state_from_the_log(tutor, store, clock):
    learner = tutor.learner("local:ann")
    play_days(tutor, clock, learner, 15, seed=5)
    expected = {s.card_id: (s.fsrs_stability, s.fsrs_difficulty, s.fsrs_due_day)
                for s in store.reviews.states(learner.id)}
    with store.engine.begin() as conn:  # as a version before FSRS left them
        conn.execute(sa.text("UPDATE card_state SET fsrs_stability = NULL, "
                             "fsrs_difficulty = NULL, fsrs_due_day = NULL"))
    with store.engine.begin() as conn:
        assert backfill_fsrs(conn) == len(expected)
    assert {s.card_id: (s.fsrs_stability, s.fsrs_difficulty, s.fsrs_due_day)
            for s in store.reviews.states(learner.id)} == pytest.approx(expected)
    with store.engine.begin() as conn:
        assert backfill_fsrs(conn) == 0  # nothing left to derive


def migration_0007():
    (path,) = (MIGRATIONS_DIR / "versions").glob("0007_*.py")
    spec = importlib.util.spec_from_file_location("migration_0007", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [5, 7])
def test_the_migrations_frozen_backfill_still_equals_the_rules(tutor, store, clock, seed):
    """0007 keeps its own copy of the backfill (issue 38.6); today it derives exactly what
    scheduler.replay does. Should the rules change on purpose, this test is what changes."""
    learner = tutor.learner("local:ann")
    play_days(tutor, clock, learner, 15, seed=seed)
    with store.engine.begin() as conn:  # a change of content: restarts in the log
        conn.execute(sa.text("UPDATE review_log SET restart = true WHERE id % 7 = 3"))
    derived = {}
    for backfill in (backfill_fsrs, migration_0007()._backfill_fsrs):
        with store.engine.begin() as conn:
            conn.execute(sa.text("UPDATE card_state SET fsrs_stability = NULL, "
                                 "fsrs_difficulty = NULL, fsrs_due_day = NULL"))
            count = backfill(conn)
        derived[backfill] = count, {
            s.card_id: (s.fsrs_stability, s.fsrs_difficulty, s.fsrs_due_day)
            for s in store.reviews.states(learner.id)}
    rules, frozen = derived.values()
    assert rules[0] > 0 and frozen == rules  # exactly equal, floats included


def edited(library: DeckLibrary, card_rev: int) -> DeckLibrary:
    text = (FIXTURES / "mini.yaml").read_text().replace(
        "  - id: mini/clear\n    type: fill_in\n    rev: 1\n",
        f"  - id: mini/clear\n    type: fill_in\n    rev: {card_rev}\n")
    return DeckLibrary([parse_deck(text)])


def test_a_changed_card_starts_over_in_both_schedules_and_in_the_replay(
        tutor, store, clock, mini_library):
    learner = tutor.learner("local:ann")
    play_days(tutor, clock, learner, 10, seed=6)
    changed = Tutor(store, edited(mini_library, 2), clock=clock)
    served = changed.next_card(learner, only="mini/clear")
    assert served.restart and served.fsrs is None and served.kind == "review"
    changed.answer(served, RIGHT["mini/clear"])
    assert store.reviews.get(served.serve_id).restart
    assert_states_replay_from_the_log(store, learner.id)


def test_the_review_log_schema_defaults_keep_old_writers_working(store):
    # Rows written without the new columns (an older process mid-deploy) read as SM-2.
    columns = ReviewLog.__table__.c
    assert columns.scheduler.server_default is not None
    assert columns.restart.server_default is not None


def test_reminders_count_the_cards_due_under_the_learners_scheduler(tutor, store, clock):
    learners = engine_of(tutor).learners
    learner = tutor.learner("local:ann")
    play_days(tutor, clock, learner, 12, seed=8)
    counts = set()
    for day in range(30):  # the two schedules part somewhere in the next month
        today = tutor.today(learner) + timedelta(days=day)
        counts.add((store.reminders.due_count(learner.id, today, "sm2"),
                    store.reminders.due_count(learner.id, today, "fsrs")))
    assert any(sm2 != fsrs for sm2, fsrs in counts)
    for scheduler in ("sm2", "fsrs"):
        learner = learners.update_settings(learner, {"scheduler": scheduler})
        assert tutor.progress(learner).due_now == store.reminders.due_count(
            learner.id, tutor.today(learner), scheduler)


def test_due_in_python_and_in_sql_agree_on_every_kind_of_state(tutor, store):
    # The engine sorts and counts with DUE_KEYS, reminders count in SQL: one table (DUE).
    learner = tutor.learner("local:ann")
    states = [  # (SM-2's due day, FSRS's: None for a state from before FSRS was kept)
        (TODAY, None), (TODAY + timedelta(days=1), None), (TODAY - timedelta(days=3), None),
        (TODAY, TODAY + timedelta(days=2)), (TODAY + timedelta(days=5), TODAY),
        (TODAY + timedelta(days=1), TODAY - timedelta(days=1)),
    ]
    with store.engine.begin() as conn:
        conn.execute(CardState.__table__.insert(), [
            {"learner_id": learner.id, "card_id": f"d/c{i}", "deck_id": "d", "card_rev": 1,
             "due_day": sm2, "fsrs_due_day": fsrs} for i, (sm2, fsrs) in enumerate(states)])
    rows = store.reviews.states(learner.id)
    assert len(rows) == len(states)
    for scheduler in SchedulerName:
        due_of, _ = DUE_KEYS[scheduler]
        for day in range(-4, 7):
            today = TODAY + timedelta(days=day)
            assert store.reminders.due_count(learner.id, today, scheduler) == sum(
                due_of(s) <= today for s in rows), (scheduler, today)


def test_a_scheduler_name_is_the_string_stored_and_sent():
    assert [str(s) for s in SchedulerName] == ["sm2", "fsrs"]
    assert SchedulerName.parse("fsrs") is SchedulerName.FSRS
    assert SchedulerName.parse("anki") is None and SchedulerName.parse(None) is None
    assert resolve("anki", ServerChoice("fsrs")).scheduler == DEFAULT_SCHEDULER
    assert resolve(None, ServerChoice("fsrs")).scheduler is SchedulerName.FSRS
    assert json.dumps(resolve("fsrs").scheduler) == '"fsrs"'


def test_the_fsrs_migration_replays_existing_history(engine):
    # A database as the version before FSRS left it: SM-2 states and their logs only.
    downgrade(engine, "0006")
    days = [TODAY, TODAY + timedelta(days=1), TODAY + timedelta(days=7)]
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO learner (external_id, display_name, timezone, rollover_hour,"
            " new_per_day, reminders_enabled, reminder_hour, leaderboard_visible, created_at,"
            " reminder_min_due, reminders_ignored, unreachable, daily_minimum, day_reviews,"
            " streak, longest_streak) VALUES ('local:old', '', 'UTC', 4, 10, false, 18,"
            " true, :now, 1, 0, false, 1, 0, 0, 0)"), {"now": datetime(2026, 12, 1)})
        for i, (day, quality) in enumerate(zip(days, (5, 4, 0), strict=True)):
            conn.execute(sa.text(
                "INSERT INTO review_log (answer_id, learner_id, card_id, deck_id, card_rev,"
                " kind, reviewed_at, study_day, quality, correct, attempts, hint_used,"
                " latency_ms, chosen, mistake_ids, ef100_after, interval_after, due_day_after)"
                " VALUES (:id, 1, 'mini/clear', 'mini', 1, :kind, :at, :day, :q, true, 1,"
                " false, 900, '[]', '[]', 250, 1, :day)"),
                {"id": f"a{i}", "kind": "new" if i == 0 else "review",
                 "at": datetime.combine(day, datetime.min.time()), "day": day, "q": quality})
        conn.execute(sa.text(
            "INSERT INTO card_state (learner_id, card_id, deck_id, card_rev, ef100,"
            " repetitions, interval, due_day, lapses, review_count, drill_pending,"
            " last_review_day) VALUES (1, 'mini/clear', 'mini', 1, 250, 0, 1, :due, 1, 3,"
            " false, :last)"), {"due": days[-1] + timedelta(days=1), "last": days[-1]})
    upgrade(engine)
    expected = replay(LoggedReview("new" if i == 0 else "review", q, day)
                      for i, (day, q) in enumerate(zip(days, (5, 4, 0), strict=True)))
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT fsrs_stability, fsrs_difficulty, fsrs_due_day"
                                   " FROM card_state")).one()
        scheduler, restart = conn.execute(sa.text(
            "SELECT scheduler, restart FROM review_log LIMIT 1")).one()
    assert (row[0], row[1]) == pytest.approx((expected.fsrs.stability,
                                              expected.fsrs.difficulty))
    assert str(row[2]) == expected.fsrs_due.isoformat()
    assert (scheduler, bool(restart)) == ("sm2", False)
    # Migration 0010: every earlier review was scheduled with the defaults (version 0), so
    # the log still replays to the same state.
    with engine.connect() as conn:
        assert {v for (v,) in conn.execute(sa.text("SELECT fsrs_version FROM review_log"))} \
            == {0}
        (again,) = replayed_states(conn).values()
    assert again.fsrs == expected.fsrs


def test_a_card_served_before_fsrs_was_kept_moves_the_stored_fsrs_state(tutor, store, clock):
    learner = tutor.learner("local:ann")
    play_days(tutor, clock, learner, 10, seed=9)
    while (served := tutor.next_card(learner)) is None:
        clock.advance(days=1)
    old = served.to_json()
    del old["fsrs"], old["scheduler"], old["remediation"], old["restart"]  # an old version's
    revived = Served.from_json(old)
    assert revived.fsrs is None and revived.review_count is not None
    tutor.answer(revived, RIGHT[revived.card_id])
    assert_states_replay_from_the_log(store, learner.id)  # continued, not started over


def test_fsrs_review_takes_py_fsrs_s_own_steps():
    """`review_fsrs` calls py-fsrs's formulas without its Card objects: on random review
    histories (same-day repeats, long gaps, a calendar moved back) every state and interval
    equals what `Scheduler.review_card` gives."""
    rng = random.Random(27)
    for _ in range(300):
        fast = slow = None
        day = TODAY
        for _ in range(rng.randint(1, 12)):
            day += timedelta(days=rng.choice([-2, 0, 0, 1, 2, 5, 30, 400]))
            quality = rng.randint(0, 5)
            fast, fast_interval = review_fsrs(fast, quality, day)
            slow, slow_interval = review_card_fsrs(slow, quality, day)
            assert (fast, fast_interval) == (slow, slow_interval)
