"""Study-day math: which day a review belongs to, in the learner's own time zone.

A study day runs from ``rollover_hour`` local wall time to the same wall time the next day, so
a late-night session counts for the evening it started in. Due dates are whole study days
(``due_day``), counted from the review's study day, never from the old due date.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["DEFAULT_ROLLOVER_HOUR", "day_start", "due_day", "resolve_zone", "study_day"]

DEFAULT_ROLLOVER_HOUR = 4
_US = timedelta(microseconds=1)


def resolve_zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (e.g. "Europe/Berlin"); ValueError if there is no such zone."""
    if not isinstance(name, str):
        raise ValueError(f"unknown timezone {name!r}: expected an IANA name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        # OSError: a directory such as "America"; ValueError: absolute or "../" keys.
        raise ValueError(f"unknown timezone {name!r}") from exc


def _zone(tz: str | tzinfo) -> tzinfo:
    if isinstance(tz, str):
        return resolve_zone(tz)
    # Fixed offsets are fine too; pytz-style zones are not (they need localize()).
    if isinstance(tz, (ZoneInfo, timezone)):
        return tz
    raise ValueError(f"tz must be an IANA name or a ZoneInfo, got {type(tz).__name__}")


def _check_hour(rollover_hour: int) -> int:
    if isinstance(rollover_hour, bool) or not isinstance(rollover_hour, int):
        raise ValueError(f"rollover_hour must be an int 0..23, got {rollover_hour!r}")
    if not 0 <= rollover_hour <= 23:
        raise ValueError(f"rollover_hour must be in 0..23, got {rollover_hour}")
    return rollover_hour


def study_day(at: datetime, tz: str | ZoneInfo, rollover_hour: int = DEFAULT_ROLLOVER_HOUR) -> date:
    """The learner's study day containing the instant ``at`` (which must be timezone-aware)."""
    if not isinstance(at, datetime):
        raise ValueError(f"at must be a datetime, got {type(at).__name__}")
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("at must be timezone-aware (a naive datetime has no instant)")
    zone = _zone(tz)
    hours = _check_hour(rollover_hour)
    # Aware minus timedelta is wall-clock arithmetic: exactly "shift the local clock back".
    return (at.astimezone(zone) - timedelta(hours=hours)).date()


def _wall(instant: datetime, zone: tzinfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


def day_start(
    day: date, tz: str | ZoneInfo, rollover_hour: int = DEFAULT_ROLLOVER_HOUR
) -> datetime:
    """The first instant (aware, UTC) of study ``day``.

    That is local wall time ``day`` at ``rollover_hour``:00; if that wall time is skipped
    (spring forward) the moment the clocks jump; if it happens twice (fall back) the first.
    Then ``study_day(day_start(d)) == d`` and the microsecond before is ``d - 1``, except for a
    day a zone skipped outright (Samoa, 2011-12-30, rollover 0), which has no instants at all.
    """
    if isinstance(day, datetime) or not isinstance(day, date):
        raise ValueError(f"day must be a date, got {type(day).__name__}")
    zone = _zone(tz)
    target = datetime.combine(day, time(_check_hour(rollover_hour)))
    # fold=0 picks the earlier of two ambiguous instants (PEP 495).
    first = target.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if _wall(first, zone) == target:
        return first
    # A gap. fold=0 maps with the offset before the jump (an instant after it), fold=1 with the
    # one after (an instant before it); the jump lies between. Binary-search the first instant
    # whose wall time is >= target, to the microsecond.
    other = target.replace(tzinfo=zone, fold=1).astimezone(UTC)
    lo, hi = min(first, other), max(first, other)
    if _wall(lo, zone) >= target:  # not the gap shape we expect; step back until it is
        lo -= timedelta(days=2)
    while hi - lo > _US:
        mid = lo + (hi - lo) // 2
        if _wall(mid, zone) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def due_day(review_day: date, interval: int) -> date:
    """The study day a card reviewed on ``review_day`` with ``interval`` days falls due."""
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
        raise ValueError(f"interval must be an int >= 0, got {interval!r}")
    return review_day + timedelta(days=interval)
