"""Graded answers per second through the engine on SQLite, next to raw sqlite3.

Both sides write the same rows (a review log, a card state and the learner's day count
per answer; one durable transaction each, WAL, synchronous=NORMAL) into the same migrated
schema, in alternating rounds of the same run, so the ratio is fair to the machine's mood.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import build, open_store
from bot.engine.served import new_serve_id
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary
from content.schema import ChoiceCard
from scheduler.storage.db import sqlite_url

TARGET_RATIO = 0.5  # issue 28: both schedulers moving, at least half of raw sqlite3
ROUNDS = 5


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 2, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=50)
        return self.now


def _right_answer(card):
    if isinstance(card, ChoiceCard):
        return next(o.id for o in card.options if o.correct)
    return {b.id: b.answer for b in card.blanks}


def _engine_round(tutor: Tutor, library: DeckLibrary, learners: Iterator, n: int) -> list[float]:
    """Serve and answer n cards; time only the answer calls."""
    answers = {card.id: _right_answer(card) for card in tutor.servable()}
    timings: list[float] = []
    while len(timings) < n:
        learner = next(learners)
        while len(timings) < n and (served := tutor.next_card(learner)):
            start = time.perf_counter()
            tutor.answer(served, answers[served.card_id])
            timings.append(time.perf_counter() - start)
    return timings


_RAW_LOG = (
    "INSERT INTO review_log (answer_id, learner_id, card_id, deck_id, card_rev, guild_id, kind,"
    " reviewed_at, study_day, quality, correct, attempts, hint_used, latency_ms, chosen,"
    " mistake_ids, ef100_after, interval_after, due_day_after)"
    " VALUES (?, ?, ?, ?, ?, NULL, 'new', ?, ?, 5, 1, 1, 0, 900, ?, '[]', 250, 1, ?)"
)
_RAW_STATE = (
    "INSERT INTO card_state (learner_id, card_id, deck_id, card_rev, ef100, repetitions,"
    " interval, due_day, lapses, review_count, drill_pending, last_review_day,"
    " last_reviewed_at) VALUES (?, ?, ?, 1, 260, 1, 1, ?, 0, 1, 0, ?, ?)"
)


_RAW_COUNT = (
    "UPDATE learner SET"
    " day_reviews = CASE WHEN day_reviews_day = :day THEN day_reviews + 1 ELSE 1 END,"
    " day_reviews_day = :day,"
    " streak = CASE WHEN (CASE WHEN day_reviews_day = :day THEN day_reviews + 1 ELSE 1 END)"
    " = daily_minimum THEN (CASE WHEN streak_day = :yesterday THEN streak + 1 ELSE 1 END)"
    " ELSE streak END,"
    " streak_day = CASE WHEN (CASE WHEN day_reviews_day = :day THEN day_reviews + 1 ELSE 1"
    " END) = daily_minimum THEN :day ELSE streak_day END,"
    " longest_streak = MAX(longest_streak, streak + 1), reminders_ignored = 0,"
    " unreachable = 0 WHERE id = :learner"
)


def _raw_round(conn: sqlite3.Connection, learner_id: int, cards: list[str], n: int,
               offset: int) -> list[float]:
    timings = []
    for i in range(offset, offset + n):
        card = f"{cards[i % len(cards)]}-{i}"
        answer_id = new_serve_id(datetime.now(UTC))  # the same ids the engine writes
        start = time.perf_counter()
        with conn:  # one transaction, committed on exit
            conn.execute(_RAW_LOG, (answer_id, learner_id, card, "deck", 1,
                                    "2026-12-02 12:00:00", "2026-12-02",
                                    json.dumps(["choice"]), "2026-12-03"))
            conn.execute(_RAW_STATE, (learner_id, card, "deck", "2026-12-03", "2026-12-02",
                                      "2026-12-02 12:00:00"))
            conn.execute(_RAW_COUNT, {"day": "2026-12-02", "yesterday": "2026-12-01",
                                      "learner": learner_id})
        timings.append(time.perf_counter() - start)
    return timings


def bench_answers(args) -> dict:
    n = args.n or 2000
    per_round = max(1, n // ROUNDS)
    library = DeckLibrary.load()
    with tempfile.TemporaryDirectory() as tmp:
        app = build(database_url=sqlite_url(Path(tmp) / "engine.db"), library=library,
                    clock=_Clock(), sandbox=False)
        tutor = app.tutor
        # Fresh learners as needed: each one only gets its daily quota of new cards.
        learners = (tutor.learner(f"bench:{i}") for i in itertools.count())

        open_store(sqlite_url(Path(tmp) / "raw.db")).engine.dispose()  # the same schema
        raw = sqlite3.connect(Path(tmp) / "raw.db", isolation_level="DEFERRED")
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=NORMAL")
        raw.execute("PRAGMA foreign_keys=ON")
        with raw:
            raw.execute("INSERT INTO learner (external_id, display_name, timezone,"
                        " rollover_hour, new_per_day, reminders_enabled, reminder_hour,"
                        " leaderboard_visible, created_at, reminder_min_due,"
                        " reminders_ignored, unreachable, daily_minimum, day_reviews, streak,"
                        " longest_streak) VALUES ('raw', '', 'UTC', 4, 10, 0, 18, 1,"
                        " '2026-12-02 12:00:00', 1, 0, 0, 1, 0, 0, 0)")
        card_ids = [card.id for card in tutor.servable()]

        engine_rates, raw_rates, engine_all, raw_all = [], [], [], []
        for r in range(ROUNDS):
            timings = _engine_round(tutor, library, learners, per_round)
            engine_all += timings
            engine_rates.append(len(timings) / sum(timings))
            timings = _raw_round(raw, 1, card_ids, per_round, r * per_round)
            raw_all += timings
            raw_rates.append(len(timings) / sum(timings))
        raw.close()
        app.close()

    engine_rate = statistics.median(engine_rates)
    raw_rate = statistics.median(raw_rates)
    ratio = engine_rate / raw_rate
    return {
        "benchmark": "answers",
        "answers": per_round * ROUNDS,
        "rounds": ROUNDS,
        "storage": "sqlite file, WAL, synchronous=NORMAL, one transaction per answer",
        # Not in the engine's answer times: its store copies the log on a thread of its own.
        "checkpoints": {"engine": "the store's background thread (db.BackgroundCheckpoints)",
                        "raw": "its commits (SQLite's auto-checkpoint at 1,000 pages)"},
        "engine_answers_per_s": round(engine_rate),
        "raw_sqlite3_writes_per_s": round(raw_rate),
        "engine_median_ms": round(statistics.median(engine_all) * 1000, 4),
        "raw_median_ms": round(statistics.median(raw_all) * 1000, 4),
        "ratio": round(ratio, 3),
        "target_ratio": TARGET_RATIO,
        "ok": ratio >= TARGET_RATIO,
    }
