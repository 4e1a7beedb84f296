"""Card states and the review log: reads (`Store.record` writes both, one transaction per
answer)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import sqlalchemy as sa

from scheduler.storage.db import DriverConnections, Queries
from scheduler.storage.models import CardState, ReviewLog
from scheduler.storage.prepared import PreparedSelect

state_t = CardState.__table__
log_t = ReviewLog.__table__


class ReviewQueries(Queries):
    """`store.reviews`."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        d, c = engine.dialect, state_t.c
        learner = c.learner_id == sa.bindparam("learner_id")
        self._state = PreparedSelect(sa.select(state_t).where(
            learner, c.card_id == sa.bindparam("card_id")), d)
        self._states = PreparedSelect(sa.select(state_t).where(learner), d)
        self._new_on = PreparedSelect(sa.select(sa.func.count().label("n")).where(
            log_t.c.learner_id == sa.bindparam("learner_id"),
            log_t.c.study_day == sa.bindparam("day", type_=sa.Date()),
            log_t.c.kind == "new"), d)

    # Card states come back as plain rows (attribute access): validating them into
    # SQLModel objects cost ~100 µs a row, most of serving a card.

    # Every serve reads them: prepared statements (scheduler/storage/prepared.py).

    def state(self, learner_id: int, card_id: str):
        rows = self.read(self._state, {"learner_id": learner_id, "card_id": card_id})
        return rows[0] if rows else None

    def states(self, learner_id: int) -> list:
        return self.read(self._states, {"learner_id": learner_id})

    def new_cards_on(self, learner_id: int, day: date) -> int:
        """How many cards this learner first met on `day`."""
        return self.read(self._new_on, {"learner_id": learner_id, "day": day})[0][0]

    def on_day(self, learner_id: int, day: date) -> list[ReviewLog]:
        query = (
            sa.select(log_t)
            .where(log_t.c.learner_id == learner_id, log_t.c.study_day == day)
            .order_by(log_t.c.id)
        )
        with self.engine.connect() as conn:
            return [ReviewLog.model_validate(r._mapping) for r in conn.execute(query)]

    def totals(self, learner_id: int, guild_id: int | None = None) -> tuple[int, int]:
        """(graded reviews, of which right on the first try), drills and cram excluded;
        in one server when `guild_id` is given."""
        first_try = sa.and_(log_t.c.correct, log_t.c.attempts == 1)
        query = sa.select(
            sa.func.count(), sa.func.coalesce(sa.func.sum(sa.case((first_try, 1), else_=0)), 0)
        ).where(log_t.c.learner_id == learner_id, log_t.c.kind.in_(("new", "review")),
                *_in_server(guild_id))
        with self.engine.connect() as conn:
            total, right = conn.execute(query).one()
        return int(total), int(right)

    def per_day(self, learner_id: int, since: datetime,
                guild_id: int | None = None) -> dict[date, int]:
        """Graded reviews per study day (drills and cram excluded), in one server when
        `guild_id` is given."""
        query = (
            sa.select(log_t.c.study_day, sa.func.count())
            .where(log_t.c.learner_id == learner_id, log_t.c.reviewed_at >= since,
                   log_t.c.kind.in_(("new", "review")), *_in_server(guild_id))
            .group_by(log_t.c.study_day)
        )
        with self.engine.connect() as conn:
            return dict(conn.execute(query).all())

    def retention_by_week(self, learner_id: int, since: datetime,
                          guild_id: int | None = None) -> list[tuple[date, float, int]]:
        """(week start, share right on the first try, reviews) for due reviews, by week; in
        one server when `guild_id` is given."""
        counts: dict[date, list[int]] = {}
        query = sa.select(log_t.c.study_day, log_t.c.correct, log_t.c.attempts,
                          log_t.c.hint_used).where(
            log_t.c.learner_id == learner_id, log_t.c.reviewed_at >= since,
            log_t.c.kind == "review", *_in_server(guild_id))
        with self.engine.connect() as conn:
            for day, correct, attempts, hint in conn.execute(query):
                week = counts.setdefault(day - timedelta(days=day.weekday()), [0, 0])
                week[0] += bool(correct and attempts == 1 and not hint)
                week[1] += 1
        return [(week, right / total, total) for week, (right, total) in sorted(counts.items())]

    def get(self, answer_id: str) -> ReviewLog | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(log_t).where(log_t.c.answer_id == answer_id)).first()
        return None if row is None else ReviewLog.model_validate(row._mapping)


def _in_server(guild_id: int | None) -> list[sa.ColumnElement]:
    """A learner's reviews in one server, found through the learner's index: the server's
    holds all its reviews (a big server: a million), and without table statistics SQLite
    took it for a learner's totals (80 ms, not 2). A unary `+` keeps a term off the
    indexes in SQLite and changes nothing in PostgreSQL."""
    if guild_id is None:
        return []
    return [sa.literal_column("+review_log.guild_id", sa.BigInteger) == guild_id]
