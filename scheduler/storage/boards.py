"""Leaderboard and insight queries: aggregates over the review log (scheduler/leaderboard.py
has the rules they apply)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from datetime import datetime

import sqlalchemy as sa

from scheduler.leaderboard import GRADED_KINDS, POINTS, Board, Insights, Standing
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

    def insights(self, since: datetime, *, guild_id: int | None = None,
                 learner_id: int | None = None, top: int = 5,
                 decks: Collection[str] | None = None) -> Insights:
        """Which cards and mistakes go wrong most, for a server or one learner; only in
        `decks` when given (the decks played there)."""
        c = log_t.c
        first_try = first_try_sql()
        scope = [c.reviewed_at >= since, c.kind.in_(GRADED_KINDS)]
        scope += [c.deck_id.in_(sorted(decks))] if decks is not None else []
        scope += [c.guild_id == guild_id] if guild_id is not None else []
        scope += [c.learner_id == learner_id] if learner_id is not None else []
        cards = (
            sa.select(c.card_id, sa.func.sum(sa.case((first_try, 0), else_=1)).label("missed"),
                      sa.func.count().label("reviews"))
            .where(*scope).group_by(c.card_id)
            .order_by(sa.literal_column("missed").desc(), c.card_id).limit(top)
        )
        with self.engine.connect() as conn:
            missed = [(r.card_id, int(r.missed), r.reviews) for r in conn.execute(cards)
                      if r.missed]
            # A right first try names no mistake: only the other reviews are read.
            counts = Counter((deck, m) for deck, ids in conn.execute(
                sa.select(c.deck_id, c.mistake_ids).where(
                    *scope, sa.or_(c.correct.is_(False), c.attempts > 1))) for m in ids)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # ties: by id
        return Insights(missed, ranked[:top])


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
