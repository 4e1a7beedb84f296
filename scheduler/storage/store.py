"""The store: every query, in groups composed here, and the answer's one transaction.

Everything in scheduler/storage is SQLAlchemy Core on the sqlmodel tables: the ORM unit of
work costs ~10x on the answer hot path (docs/architecture.md, "Storage"). One review is one
transaction: the log row (unique answer id: a repeated answer is recorded once), the card
state (guarded by its review count: an answer served against an older state is refused as
stale) and, from Discord, the served card's last attempt (guarded by its attempt number).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import configure_mappers

from scheduler.choice import DEFAULT_SCHEDULER, SchedulerName
from scheduler.storage.boards import BoardQueries
from scheduler.storage.db import BackgroundCheckpoints, DriverConnections
from scheduler.storage.decks import DeckQueries
from scheduler.storage.fits import FitQueries
from scheduler.storage.insights import InsightQueries
from scheduler.storage.learners import LearnerQueries
from scheduler.storage.misconceptions import MisconceptionQueries
from scheduler.storage.models import CardState, Learner, ReviewLog
from scheduler.storage.prepared import Prepared
from scheduler.storage.reminders import ReminderQueries
from scheduler.storage.reviews import ReviewQueries
from scheduler.storage.served import ServedQueries
from scheduler.storage.servers import ServerQueries

learner_t = Learner.__table__
state_t = CardState.__table__
log_t = ReviewLog.__table__


class StaleReview(Exception):
    """The card state changed since the card was served; nothing was recorded."""


class ServedMoved(Exception):
    """The served card's attempt moved on (another click got there first); nothing was
    recorded."""


@dataclass(frozen=True, slots=True)
class Advance:
    """A served card's next attempt state, written only if it is still at `attempts` (its
    moves: attempts, free code retries and the hint, `served.moves`) and, for a card of a
    stored deck (`deck_id`), only if that deck is still at `deck_version`, not removed: a
    process judged it on the deck it has loaded, which may be behind the store's."""

    serve_id: str
    attempts: int
    served: dict
    finished: bool
    clear_draft: bool = True  # a new attempt starts with no picks; a hint keeps them
    deck_id: str | None = None  # None: a bundled deck's card, or a card being retired
    deck_version: int = 0


@dataclass(slots=True)  # not frozen: a frozen __init__ sets its 35 fields the slow way
class ReviewRecord:
    """One graded answer and the state it leaves behind (built once, then only read)."""

    answer_id: str
    learner_id: int
    card_id: str
    deck_id: str
    card_rev: int
    kind: str
    reviewed_at: datetime
    study_day: date
    quality: int
    correct: bool
    attempts: int
    hint_used: bool
    latency_ms: int
    chosen: list
    mistake_ids: list
    guild_id: int | None
    # The state after this review, SM-2's and FSRS's; `expected_count` is the review count
    # it was served at (None: a new card, no state row yet).
    ef100: int
    repetitions: int
    interval: int
    due_day: date
    lapses: int
    drill_pending: bool
    expected_count: int | None
    changes_schedule: bool
    # What the learner was told, by the scheduler they are on.
    told_interval: int
    told_due_day: date
    scheduler: SchedulerName = DEFAULT_SCHEDULER
    fsrs_stability: float | None = None
    fsrs_difficulty: float | None = None
    fsrs_due_day: date | None = None
    restart: bool = False
    # The FSRS parameter version the review was scheduled with, and the state it moved.
    fsrs_version: int = 0
    fsrs_stability_before: float | None = None
    fsrs_difficulty_before: float | None = None
    fsrs_last_day_before: date | None = None
    # Misconceptions this answer corrected (`mistake_ids`: those it showed), and the cards
    # it brought forward to `remedy_day`.
    corrected: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    remedy_day: date | None = None


@dataclass(frozen=True, slots=True)
class Recorded:
    duplicate: bool
    quality: int
    correct: bool
    due_day: date
    interval: int


class Store:
    """Every query, by group (`store.learners`, `store.served`, ...: each built alike on the
    shared engine); the answer's one transaction (`record`) is the store's own, since it
    writes across groups: the served card, the log, the card state, the learner's day and
    their misconceptions."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        # Rows become models without validation (`model_construct`), whose attributes are
        # the ORM's: its mappers must be set up first (validation would have done it).
        configure_mappers()
        self.connections = connections = DriverConnections(engine)
        self._checkpoints: BackgroundCheckpoints | None = None
        self.learners = LearnerQueries(engine, connections)
        self.servers = ServerQueries(engine, connections)
        self.reviews = ReviewQueries(engine, connections)
        self.served = ServedQueries(engine, connections)
        self.decks = DeckQueries(engine, connections)
        self.boards = BoardQueries(engine, connections)
        self.insights = InsightQueries(engine, connections)
        self.reminders = ReminderQueries(engine, connections)
        self.misconceptions = MisconceptionQueries(engine, connections)
        self.fits = FitQueries(engine, connections)
        self._integrity_error = engine.dialect.loaded_dbapi.IntegrityError
        # Compiled once: the answer hot path only binds values.
        d = engine.dialect
        # The review's rows come straight from the record's attributes (`of_record`).
        self._insert_log = Prepared(log_t.insert(), d, [*_LOG_COLUMNS.values()]).of_record(
            _fields(_LOG_COLUMNS))
        self._insert_state = Prepared(state_t.insert(), d,
                                      [*_STATE_COLUMNS.values(), *_FIRST_REVIEW]).of_record(
            _fields(_STATE_COLUMNS), _FIRST_REVIEW)
        self._update_schedule = Prepared(_keyed_update(
            **{c: sa.bindparam(c, type_=state_t.c[c].type)
               for c in _SCHEDULE_COLUMNS.values()},
            review_count=state_t.c.review_count + sa.literal_column("1"),
            remedy_day=None,  # a scheduled review is more than the remedy was for
        ), d, []).of_record({**_fields(_SCHEDULE_COLUMNS), **_KEY_FIELDS})
        self._update_drill = Prepared(_keyed_update(
            drill_pending=sa.bindparam("drill_pending", type_=sa.Boolean())), d, [])
        self._count_review = Prepared(_streak_update(), d, [])
        self._clear_remedy = Prepared(_keyed_update(remedy_day=None), d, [])

    @property
    def on_server(self) -> bool:
        """A database server (PostgreSQL), whose calls wait on the network and on its
        commit flush, rather than a file (SQLite), whose calls only use CPU."""
        return self.connections.on_server

    def ping(self) -> bool:
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT 1").scalar() == 1

    # -- the answer hot path -------------------------------------------------------------

    def checkpoint_in_background(self) -> None:
        """For a long-running process on an SQLite file: its write-ahead log is copied into
        the database by a thread of its own, never by an answer's commit
        (`db.BackgroundCheckpoints`); `close` stops it."""
        if self._checkpoints is None and not self.on_server and self.engine.url.database not in (
                None, "", ":memory:"):
            self._checkpoints = BackgroundCheckpoints(self.engine)
            self._checkpoints.start()

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.stop()
            self._checkpoints = None
        self.connections.close()

    def record(self, r: ReviewRecord, advance: Advance | None = None) -> Recorded:
        """Log one graded answer and move the card's state, in one transaction, with the
        served card's last attempt (`advance`) when there is one.

        A repeated answer id returns what was recorded the first time. A state that moved
        since the card was served raises StaleReview, a served card that moved on raises
        ServedMoved; either way nothing is recorded.
        """
        with self.connections.use() as conn:
            cursor = conn.cursor()
            try:
                if advance is not None and not self.served.advance_in(cursor, advance):
                    raise ServedMoved(advance.serve_id)  # rolled back below
                self._insert_log(cursor, r)
                written = self._write_state(cursor, r)
                if written and r.changes_schedule:
                    self._count_review(cursor, {"k_learner": r.learner_id, "day": r.study_day,
                                                "yesterday": r.study_day - timedelta(days=1)})
                if written and (r.mistake_ids or r.corrected or r.remedies):
                    self.misconceptions.record_answer(cursor, r)
            except self._integrity_error:
                # Plain INSERTs (ON CONFLICT cannot be cached by SQLAlchemy): a conflict is a
                # repeated answer id, or a racing first review of the same card.
                conn.rollback()
                written = None
            except BaseException:
                conn.rollback()
                raise
            finally:
                cursor.close()
            if written:
                conn.commit()
                return Recorded(False, r.quality, r.correct, r.told_due_day, r.told_interval)
            conn.rollback()
        first = self.reviews.get(r.answer_id) if written is None else None
        if first is None:
            raise StaleReview(r.card_id)
        return Recorded(True, first.quality, first.correct, first.due_day_after,
                        first.interval_after)

    def _write_state(self, cursor, r: ReviewRecord) -> bool:
        if r.kind == "cram":
            return True  # cramming is logged but never moves the schedule
        if r.expected_count is None:
            if not r.changes_schedule:
                return True  # a drill or cram of a card never scheduled leaves no state
            return bool(self._insert_state(cursor, r))
        if r.changes_schedule:
            return bool(self._update_schedule(cursor, r))
        key = {k: getattr(r, field) for k, field in _KEY_FIELDS.items()}
        if r.kind == "remedy":  # served, so no longer pending; no schedule moves
            return bool(self._clear_remedy(cursor, key))
        # A rule-7 drill changes no schedule.
        return bool(self._update_drill(cursor, {**key, "drill_pending": r.drill_pending}))


# Where each stored field of a ReviewRecord goes: (review_log column, card_state column).
# The statements and their values all derive from this one table.
_STORED = {
    "answer_id": ("answer_id", None),
    "learner_id": ("learner_id", "learner_id"),
    "card_id": ("card_id", "card_id"),
    "deck_id": ("deck_id", "deck_id"),
    "card_rev": ("card_rev", "card_rev"),
    "guild_id": ("guild_id", None),
    "kind": ("kind", None),
    "reviewed_at": ("reviewed_at", "last_reviewed_at"),
    "study_day": ("study_day", "last_review_day"),
    "quality": ("quality", None),
    "correct": ("correct", None),
    "attempts": ("attempts", None),
    "hint_used": ("hint_used", None),
    "latency_ms": ("latency_ms", None),
    "chosen": ("chosen", None),
    "mistake_ids": ("mistake_ids", None),
    "ef100": ("ef100_after", "ef100"),
    "repetitions": (None, "repetitions"),
    "interval": (None, "interval"),
    "due_day": (None, "due_day"),
    "lapses": (None, "lapses"),
    "drill_pending": (None, "drill_pending"),
    "fsrs_stability": (None, "fsrs_stability"),
    "fsrs_difficulty": (None, "fsrs_difficulty"),
    "fsrs_due_day": (None, "fsrs_due_day"),
    "scheduler": ("scheduler", None),
    "told_interval": ("interval_after", None),
    "told_due_day": ("due_day_after", None),
    "restart": ("restart", None),
    "fsrs_version": ("fsrs_version", None),
    "fsrs_stability_before": ("fsrs_stability_before", None),
    "fsrs_difficulty_before": ("fsrs_difficulty_before", None),
    "fsrs_last_day_before": ("fsrs_last_day_before", None),
}
_LOG_COLUMNS = {field: log for field, (log, _) in _STORED.items() if log}
_STATE_COLUMNS = {field: state for field, (_, state) in _STORED.items() if state}
# What a review changes in an existing state row (its key and deck stay).
_SCHEDULE_COLUMNS = {field: column for field, column in _STATE_COLUMNS.items()
                     if column not in ("learner_id", "card_id", "deck_id")}
_FIRST_REVIEW = {"review_count": 1}


# The keys of a state's UPDATE, from the record.
_KEY_FIELDS = {"k_learner": "learner_id", "k_card": "card_id", "k_count": "expected_count"}


def _fields(columns: dict[str, str]) -> dict[str, str]:
    """column -> the record's field it is written from."""
    return {column: field for field, column in columns.items()}


def _streak_update() -> sa.Update:
    """Count a graded review towards the learner's day; the review that reaches the daily
    minimum extends the streak (or starts a new one). One statement, no read: every SET
    expression sees the row as it was."""
    day = sa.bindparam("day", type_=sa.Date())
    c = learner_t.c
    count = sa.case((c.day_reviews_day == day, c.day_reviews + 1), else_=1)
    reaches = count == c.daily_minimum
    streak = sa.case((reaches, sa.case(
        (c.streak_day == sa.bindparam("yesterday", type_=sa.Date()), c.streak + 1), else_=1)),
        else_=c.streak)
    return learner_t.update().where(c.id == sa.bindparam("k_learner")).values(
        day_reviews=count, day_reviews_day=day, streak=streak,
        streak_day=sa.case((reaches, day), else_=c.streak_day),
        longest_streak=sa.case((streak > c.longest_streak, streak), else_=c.longest_streak),
        # They are back: reminders were not ignored, and their DMs may be open again.
        reminders_ignored=sa.literal_column("0"), unreachable=sa.false(),
    )


def _keyed_update(**values) -> sa.Update:
    """UPDATE card_state guarded by the review count the card was served at."""
    return (
        state_t.update()
        .where(
            state_t.c.learner_id == sa.bindparam("k_learner"),
            state_t.c.card_id == sa.bindparam("k_card"),
            state_t.c.review_count == sa.bindparam("k_count"),
        )
        .values(**values)
    )
