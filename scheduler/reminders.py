"""When a learner's next daily reminder is due: their timezone, hour, quiet hours and how
many reminders they ignored in a row. Pure rules on plain values; the sweep that claims and
sends reminders is bot/engine/reminders.py.

Each learner row holds its next reminder instant in UTC, computed here from their timezone
with zoneinfo (a per-learner cron trigger fired twice on a DST fall-back day in our trials;
this does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Protocol

from scheduler.studyday import day_start, resolve_zone

BACKOFF_AFTER = 3  # ignored reminders in a row before they come less often
MAX_EVERY_DAYS = 7


class ReminderTimes(Protocol):
    """What the next reminder depends on: a stored learner or a claimed one (`Claimed`)."""

    @property
    def timezone(self) -> str: ...
    @property
    def reminder_hour(self) -> int: ...
    @property
    def quiet_start(self) -> int | None: ...
    @property
    def quiet_end(self) -> int | None: ...
    @property
    def reminders_ignored(self) -> int: ...


class ReminderSettings(ReminderTimes, Protocol):
    """A learner's reminder times and switch, with when their last reminder went out."""

    @property
    def reminders_enabled(self) -> bool: ...
    @property
    def last_reminder_at(self) -> datetime | None: ...


def reminder_hour(learner: ReminderTimes) -> int:
    """The local hour to remind at: the chosen one, or the end of the quiet hours."""
    hour, start, end = learner.reminder_hour, learner.quiet_start, learner.quiet_end
    if start is None or end is None or start == end:
        return hour
    quiet = start <= hour < end if start < end else (hour >= start or hour < end)
    return end if quiet else hour


def every_days(ignored: int) -> int:
    """Daily; after BACKOFF_AFTER ignored reminders, every 2, 4, then 7 days."""
    if ignored < BACKOFF_AFTER:
        return 1
    return min(MAX_EVERY_DAYS, 2 ** (ignored - BACKOFF_AFTER + 1))


def next_reminder(learner: ReminderTimes, after: datetime) -> datetime:
    """The first reminder instant strictly after `after` (aware UTC).

    Local wall time `reminder_hour(learner)`:00, on every `every_days` day; in a DST gap,
    the moment the clocks jump; on a fall-back day, the first of the two occurrences.
    """
    zone = resolve_zone(learner.timezone)
    hour = reminder_hour(learner)
    local_day = after.astimezone(zone).date()
    candidate = day_start(local_day, zone, hour)
    if candidate <= after:
        candidate = day_start(local_day + timedelta(days=1), zone, hour)
    extra = every_days(learner.reminders_ignored) - 1
    if extra:
        candidate = day_start(candidate.astimezone(zone).date() + timedelta(days=extra),
                              zone, hour)
    return candidate


def reschedule(learner: ReminderSettings, now: datetime) -> datetime | None:
    """The next reminder after a settings change (hour, timezone, on/off): never a second
    one on a local day that already had its reminder."""
    if not learner.reminders_enabled:
        return None
    slot = next_reminder(learner, now)
    if learner.last_reminder_at is not None:
        zone = resolve_zone(learner.timezone)
        if learner.last_reminder_at.astimezone(zone).date() >= slot.astimezone(zone).date():
            slot = next_reminder(learner, slot)
    return slot


@dataclass(frozen=True)
class Claimed:
    """A learner whose reminder a sweep claimed (bot/engine/reminders.py): its fields are
    what the store's claim reads (scheduler/storage/reminders.py REMINDER_FIELDS)."""

    id: int
    external_id: str
    display_name: str
    timezone: str
    rollover_hour: int
    reminder_hour: int
    quiet_start: int | None
    quiet_end: int | None
    reminders_ignored: int
    reminder_min_due: int
    next_reminder_at: datetime
    streak: int
    streak_day: date | None
    scheduler: str | None = None  # the learner's own choice (None: their server's)
