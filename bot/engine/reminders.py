"""A reminder is sent: the sweep that claims every due reminder, counts the learner's due
cards and hands each reminder to a front end's `Sender` (Discord: bot/discord_ui/reminders.py,
which words the message and runs this sweep every minute). When a reminder is due is
scheduler/reminders.py's rule.

One sweep instead of a job per learner. A reminder is claimed, sent, then advanced. A crash
between send and advance leaves the claim to expire and the reminder to be sent again with
the same nonce, which Discord drops (`enforce_nonce`): once per day, never lost. A learner
whose DMs are closed gets it in their server's reminder channel, if it has one.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Protocol

from scheduler.choice import resolve
from scheduler.reminders import BACKOFF_AFTER, Claimed, next_reminder, reminder_hour
from scheduler.storage.models import Learner
from scheduler.studyday import study_day

__all__ = ["GRACE", "LEASE", "DMClosed", "RateLimiter", "Reminder", "ReminderSweep", "Sender",
           "SweepReport", "current_streak", "nonce_for", "reminder_hour"]

log = logging.getLogger(__name__)

GRACE = timedelta(hours=2)  # a reminder later than this waits for its next day
LEASE = timedelta(minutes=2)  # a claim older than this was lost with its sweep


def nonce_for(learner_id: int, slot: datetime) -> str:
    """The same reminder always carries the same nonce (Discord allows 25 characters)."""
    digest = hashlib.sha256(f"{learner_id}:{slot.isoformat()}".encode()).hexdigest()
    return f"rem{digest[:20]}"


def current_streak(learner: Learner | Claimed, today: date) -> int:
    """The stored streak, unless a whole study day has passed without one."""
    if learner.streak_day is None or learner.streak_day < today - timedelta(days=1):
        return 0
    return learner.streak


@dataclass(frozen=True)
class Reminder:
    """What one reminder says; the front end words it."""

    learner_id: int
    external_id: str
    display_name: str
    due: int
    streak: int
    slot: datetime
    nonce: str
    backing_off: bool  # reminders now come less often: the learner ignored a few


class DMClosed(Exception):
    """The learner does not accept DMs from the bot (Discord error 50007)."""


class Sender(Protocol):
    """A front end's way to deliver a reminder: privately, or in a server channel."""

    async def send_dm(self, reminder: Reminder) -> None:
        """Raises DMClosed when the learner does not accept it."""
        ...

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
    """Claims every due reminder and deals with each: sent, sent to a channel, put off."""

    def __init__(self, store, sender: Sender, *, clock: Callable[[], datetime],
                 limiter: RateLimiter | None = None, batch: int = 1000,
                 servable: Callable[[int], Collection[str]] | None = None):
        """`servable`: a learner's id to the cards they can be served outside a server,
        the only ones a reminder counts (None, in store-only benches: every card state)."""
        self.store, self.sender, self.clock = store, sender, clock
        self.limiter = limiter or RateLimiter(20.0)
        self.batch = batch
        self.servable = servable

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
        choice = resolve(learner.scheduler, self.store.servers.choice(learner.id, None))
        cards = None if self.servable is None else self.servable(learner.id)
        due = self.store.reminders.due_count(learner.id, today, choice.scheduler, cards)
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
