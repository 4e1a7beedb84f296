"""Server leaderboards that reward real learning, and what a server's learners miss most.

Points come from the review log (never stored twice): a review that was due answered
right on the first try counts most; a new card learned within the daily limit a little
less; cramming, same-day drills (rule 7) and practice beyond the new-card limit count
nothing. Only reviews done in the server count for its board, from learners who did not
hide themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Protocol

from scheduler.studyday import resolve_zone

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
    """What one review earns (scheduler/storage/boards.py sums the same in SQL)."""
    first_try = correct and attempts == 1 and not hint_used
    return POINTS.get((kind, first_try, correct), 0)


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


class BoardSettings(Protocol):
    """What a board's period reads of its server's settings."""

    timezone: str
    week_start: int
    season_started_at: datetime | None


def period_start(settings: BoardSettings, period: str, now: datetime) -> datetime | None:
    if period == "week":
        return week_start(now, settings.timezone, settings.week_start)
    return settings.season_started_at  # the season (all time before the first reset)


@dataclass(frozen=True)
class Insights:
    missed_cards: list[tuple[str, int, int]]  # card id, missed on first try, reviews
    # (deck id, mistake id), times: a mistake id is its deck's own, counted per deck
    mistakes: list[tuple[tuple[str, str], int]]
