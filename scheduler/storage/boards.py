"""Leaderboard queries: aggregates over the review log (scheduler/leaderboard.py has the
rules they apply)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from scheduler.leaderboard import GRADED_KINDS, POINTS, Board, Standing
from scheduler.storage.db import Queries
from scheduler.storage.models import Learner, ReviewLog

log_t = ReviewLog.__table__
learner_t = Learner.__table__


def first_try_sql() -> sa.ColumnElement:
    """Right on the first attempt without a hint: the only answer that shows recall."""
    c = log_t.c
    return sa.and_(c.correct, c.attempts == 1, c.hint_used.is_(False))


def points_sql() -> sa.ColumnElement:
    """points_for in SQL, so boards are one aggregate over the log."""
    c = log_t.c
    first_try = first_try_sql()
    return sa.case(
        *[(sa.and_(c.kind == kind, first_try if ft else sa.not_(first_try),
                   c.correct if ok else sa.not_(c.correct)), points)
          for (kind, ft, ok), points in POINTS.items() if points],
        else_=0)


class BoardQueries(Queries):
    """`store.boards`."""

    def standings(self, guild_id: int, since: datetime | None, *, page: int = 1,
                  per_page: int = 10, caller_id: int | None = None) -> Board:
        """One page of a server's board since `since` (None: all time), and the caller's
        own standing wherever it is."""
        return board_page(self.ranking(guild_id, since), page, per_page, caller_id)

    def ranking(self, guild_id: int, since: datetime | None) -> list[sa.Row]:
        """Everyone on a server's board since `since` (None: all time), best first: one
        aggregate over the log, which `board_page` pages without reading it again."""
        c = log_t.c
        points = points_sql()
        first_try = sa.case((first_try_sql(), 1), else_=0)
        totals = (
            sa.select(c.learner_id, sa.func.sum(points).label("points"),
                      sa.func.count().label("reviews"), sa.func.sum(first_try).label("first_try"))
            .where(c.guild_id == guild_id, c.kind.in_(GRADED_KINDS),
                   *([c.reviewed_at >= since] if since else []))
            .group_by(c.learner_id).subquery()
        )
        query = (
            sa.select(totals, learner_t.c.display_name, learner_t.c.streak)
            .join(learner_t, learner_t.c.id == totals.c.learner_id)
            .where(learner_t.c.leaderboard_visible.is_(True))
            .order_by(totals.c.points.desc(), totals.c.first_try.desc(), totals.c.learner_id)
        )
        with self.engine.connect() as conn:
            return conn.execute(query).all()


def board_page(rows: list[sa.Row], page: int, per_page: int, caller_id: int | None) -> Board:
    """One page of a ranking (`BoardQueries.ranking`), and the caller's own standing
    wherever it is."""
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(1, page), pages)
    shown = range((page - 1) * per_page, page * per_page)
    standings, caller, rank, previous = [], None, 0, None
    for index, row in enumerate(rows):
        if row.points != previous:  # ties share a rank
            rank, previous = index + 1, row.points
        if index in shown or row.learner_id == caller_id:  # only what is displayed
            standing = Standing(rank, row.learner_id, row.display_name or "someone",
                                int(row.points), row.reviews, int(row.first_try), row.streak)
            standings += [standing] if index in shown else []
            caller = standing if row.learner_id == caller_id else caller
    return Board(standings, len(rows), page, pages, caller)
