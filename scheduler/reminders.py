"""Daily review reminders: when each one is due, and the sweep that sends them.

One sweep (every minute) instead of a job per learner: each learner row holds its next
reminder instant in UTC, computed here from their timezone with zoneinfo (a per-learner
cron trigger fired twice on a DST fall-back day in our trials; this does not). A reminder
is claimed, sent, then advanced. A crash between send and advance leaves the claim to
expire and the reminder to be sent again with the same nonce, which Discord drops
(`enforce_nonce`): once per day, never lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Protocol

from scheduler.choice import resolve
from scheduler.studyday import day_start, resolve_zone, study_day

log = logging.getLogger(__name__)

GRACE = timedelta(hours=2)  # a reminder later than this waits for its next day
LEASE = timedelta(minutes=2)  # a claim older than this was lost with its sweep
BACKOFF_AFTER = 3  # ignored reminders in a row before they come less often
MAX_EVERY_DAYS = 7


class ReminderSettings(Protocol):
    """What the reminder rules read of a learner (a stored Learner, or a Claimed row)."""

    timezone: str
    reminder_hour: int
    quiet_start: int | None
    quiet_end: int | None
    reminders_ignored: int


class RemindedLearner(ReminderSettings, Protocol):
    reminders_enabled: bool
    last_reminder_at: datetime | None


class StreakHolder(Protocol):
    streak: int
    streak_day: date | None


def reminder_hour(learner: ReminderSettings) -> int:
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


def next_reminder(learner: ReminderSettings, after: datetime) -> datetime:
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


def reschedule(learner: RemindedLearner, now: datetime) -> datetime | None:
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


def nonce_for(learner_id: int, slot: datetime) -> str:
    """The same reminder always carries the same nonce (Discord allows 25 characters)."""
    digest = hashlib.sha256(f"{learner_id}:{slot.isoformat()}".encode()).hexdigest()
    return f"rem{digest[:20]}"


@dataclass(frozen=True)
class Claimed:
    """A learner whose reminder this sweep claimed (its fields are what the claim reads)."""

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


@dataclass(frozen=True)
class Reminder:
    learner_id: int
    external_id: str
    display_name: str
    due: int
    streak: int
    slot: datetime
    nonce: str
    backing_off: bool

    def text(self) -> str:
        cards = "card is" if self.due == 1 else "cards are"
        lines = [f"📚 {self.due} {cards} due for review."]
        if self.streak:
            lines.append(f"🔥 You're on a {self.streak}-day streak: keep it going!")
        if self.backing_off:
            lines.append("You've skipped a few reminders, so I'll send them less often. "
                         "Review once, or use /settings reminders:True, to get them daily "
                         "again.")
        lines.append("Use the buttons below, or /settings to change the time.")
        return "\n".join(lines)


class DMClosed(Exception):
    """The learner does not accept DMs from the bot (Discord error 50007)."""


class Sender(Protocol):
    async def send_dm(self, reminder: Reminder) -> None: ...

    async def send_channel(self, channel_id: int, reminder: Reminder) -> None: ...


@dataclass
class SweepReport:
    claimed: int = 0
    sent: int = 0
    via_channel: int = 0
    nothing_due: int = 0
    too_late: int = 0
    unreachable: int = 0
    failed: int = 0
    claim_ms: float = 0.0
    sent_ids: list[int] = field(default_factory=list)


class RateLimiter:
    """At most `per_second` sends per second, paced evenly (Discord's limits are per
    route and global; this keeps a burst of 10,000 reminders well inside them)."""

    def __init__(self, per_second: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.interval = 1.0 / per_second
        self.clock, self.sleep = clock, sleep
        self.next_at = 0.0

    async def wait(self) -> None:
        now = self.clock()
        if self.next_at > now:
            await self.sleep(self.next_at - now)
            now = self.next_at
        self.next_at = max(now, self.next_at) + self.interval


class ReminderSweep:
    def __init__(self, store, sender: Sender, *, clock: Callable[[], datetime],
                 limiter: RateLimiter | None = None, batch: int = 1000):
        self.store, self.sender, self.clock = store, sender, clock
        self.limiter = limiter or RateLimiter(20.0)
        self.batch = batch

    async def run(self) -> SweepReport:
        """Claim every due reminder and deal with each; one failure never stops the rest."""
        report = SweepReport()
        while True:
            # A fresh token per batch: a reminder that failed keeps its claim (until the
            # lease runs out) instead of coming round again in this sweep.
            token = secrets.token_hex(8)
            now = self.clock()
            started = time.perf_counter()
            claimed = self.store.reminders.claim(now, token, now - LEASE, self.batch)
            report.claim_ms += (time.perf_counter() - started) * 1000
            if not claimed:
                return report
            report.claimed += len(claimed)
            for row in claimed:
                learner = Claimed(**row._mapping)
                try:
                    await self._one(learner, token, report)
                except Exception:  # noqa: BLE001 - its claim expires; retried next sweep
                    report.failed += 1
                    log.exception("reminder for learner %s failed", learner.id)

    async def _one(self, learner: Claimed, token: str, report: SweepReport) -> None:
        now = self.clock()
        slot = learner.next_reminder_at
        if now - slot > GRACE:  # long downtime: only the latest slot still counts
            slot = next_reminder(learner, now - GRACE)
            if slot > now:
                report.too_late += 1
                self.store.reminders.advance(learner.id, token, slot, sent_at=None)
                return
        today = study_day(now, learner.timezone, learner.rollover_hour)
        choice = resolve(learner.scheduler, *self.store.servers.choice(learner.id, None))
        due = self.store.reminders.due_count(learner.id, today, choice.scheduler)
        if due < learner.reminder_min_due:
            report.nothing_due += 1
            self.store.reminders.advance(learner.id, token, next_reminder(learner, now),
                                         sent_at=None)
            return
        reminder = Reminder(learner.id, learner.external_id, learner.display_name, due,
                            current_streak(learner, today), slot, nonce_for(learner.id, slot),
                            learner.reminders_ignored + 1 >= BACKOFF_AFTER)
        await self.limiter.wait()
        unreachable = False
        try:
            await self.sender.send_dm(reminder)
            report.sent += 1
        except DMClosed:
            channel = self.store.reminders.channel_for(learner.id)
            if channel is None:
                unreachable = True
                report.unreachable += 1
            else:
                await self.sender.send_channel(channel, reminder)
                report.via_channel += 1
        report.sent_ids.append(learner.id)
        ignored = learner.reminders_ignored + 1
        following = next_reminder(replace(learner, reminders_ignored=ignored), now)
        self.store.reminders.advance(learner.id, token, following, sent_at=now,
                                     ignored=ignored, unreachable=unreachable)


def current_streak(learner: StreakHolder, today: date) -> int:
    """The stored streak, unless a whole study day has passed without one."""
    if learner.streak_day is None or learner.streak_day < today - timedelta(days=1):
        return 0
    return learner.streak
