"""Server leaderboards that reward real learning, and what a server's learners miss most.

Points come from the review log (never stored twice): a review that was due answered
right on the first try counts most; a new card learned within the daily limit a little
less; cramming, same-day drills (rule 7) and practice beyond the new-card limit count
nothing. Only reviews done in the server count for its board, from learners who did not
hide themselves.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import sqlalchemy as sa

from scheduler.models import GuildSettings, Learner, ReviewLog
from scheduler.studyday import resolve_zone

log_t = ReviewLog.__table__
learner_t = Learner.__table__

# (kind, first try without a hint, correct in the end) -> points
POINTS = {
    ("review", True, True): 10,
    ("review", False, True): 3,
    ("review", False, False): 1,  # showing up for a due review still counts a little
    ("new", True, True): 5,
    ("new", False, True): 2,
    ("new", False, False): 0,
}
GRADED_KINDS = ("review", "new")


def points_for(kind: str, correct: bool, attempts: int, hint_used: bool) -> int:
    first_try = correct and attempts == 1 and not hint_used
    return POINTS.get((kind, first_try, correct), 0)


def _first_try() -> sa.ColumnElement:
    """Right on the first attempt without a hint: the only answer that shows recall."""
    c = log_t.c
    return sa.and_(c.correct, c.attempts == 1, c.hint_used.is_(False))


def _points_sql() -> sa.ColumnElement:
    """points_for in SQL, so boards are one aggregate over the log."""
    c = log_t.c
    first_try = _first_try()
    return sa.case(
        *[(sa.and_(c.kind == kind, first_try if ft else sa.not_(first_try),
                   c.correct if ok else sa.not_(c.correct)), points)
          for (kind, ft, ok), points in POINTS.items() if points],
        else_=0)


def week_start(now: datetime, timezone: str, first_day: int = 0) -> datetime:
    """The start (aware UTC) of the server's current week: local midnight of `first_day`
    (0 = Monday) in the server's timezone."""
    zone = resolve_zone(timezone)
    local = now.astimezone(zone)
    start_day: date = local.date() - timedelta(days=(local.weekday() - first_day) % 7)
    return datetime.combine(start_day, datetime.min.time(), zone).astimezone(now.tzinfo)


@dataclass(frozen=True)
class Standing:
    rank: int
    learner_id: int
    name: str
    points: int
    reviews: int
    first_try: int
    streak: int

    @property
    def accuracy(self) -> float | None:
        return self.first_try / self.reviews if self.reviews else None


@dataclass(frozen=True)
class Board:
    standings: list[Standing]  # this page
    total: int
    page: int
    pages: int
    caller: Standing | None


def board(engine: sa.Engine, guild_id: int, since: datetime | None, *, page: int = 1,
          per_page: int = 10, caller_id: int | None = None) -> Board:
    c = log_t.c
    points = _points_sql()
    first_try = sa.case((_first_try(), 1), else_=0)
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
    with engine.connect() as conn:
        rows = conn.execute(query).all()
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


def period_start(settings: GuildSettings, period: str, now: datetime) -> datetime | None:
    if period == "week":
        return week_start(now, settings.timezone, settings.week_start)
    return settings.season_started_at  # the season (all time before the first reset)


@dataclass(frozen=True)
class Insights:
    missed_cards: list[tuple[str, int, int]]  # card id, missed on first try, reviews
    mistakes: list[tuple[str, int]]  # mistake id, times


def insights(engine: sa.Engine, since: datetime, *, guild_id: int | None = None,
             learner_id: int | None = None, top: int = 5) -> Insights:
    """Which cards and mistakes go wrong most, for a server or one learner."""
    c = log_t.c
    first_try = _first_try()
    scope = [c.reviewed_at >= since, c.kind.in_(GRADED_KINDS)]
    scope += [c.guild_id == guild_id] if guild_id is not None else []
    scope += [c.learner_id == learner_id] if learner_id is not None else []
    cards = (
        sa.select(c.card_id, sa.func.sum(sa.case((first_try, 0), else_=1)).label("missed"),
                  sa.func.count().label("reviews"))
        .where(*scope).group_by(c.card_id)
        .order_by(sa.literal_column("missed").desc(), c.card_id).limit(top)
    )
    with engine.connect() as conn:
        missed = [(r.card_id, int(r.missed), r.reviews) for r in conn.execute(cards)
                  if r.missed]
        counts = Counter(m for (ids,) in conn.execute(sa.select(c.mistake_ids).where(*scope))
                         for m in ids)
    return Insights(missed, counts.most_common(top))
