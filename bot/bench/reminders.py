"""The reminder sweep at scale: finding and claiming the due learners among 100,000 on
SQLite, and sending through a rate-limited fake Discord."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bot.app import open_store
from bot.engine import ReminderSweep
from bot.engine.reminders import LEASE, RateLimiter
from scheduler.storage.db import sqlite_url
from scheduler.storage.store import Store

LEARNERS = 100_000
DUE_NOW = 1_000  # 1%: the learners whose reminder falls in this minute
TARGET_CLAIM_MS = 50.0
SEND_LIMIT_PER_S = 200.0
NOW = datetime(2026, 12, 2, 18, 0, 30, tzinfo=UTC)


def _sql(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _populate(store: Store) -> None:
    """100,000 opted-in learners; every hundredth one's reminder falls due this minute."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
            " INSERT INTO learner (external_id, display_name, timezone, rollover_hour,"
            " new_per_day, reminders_enabled, reminder_hour, leaderboard_visible, created_at,"
            " next_reminder_at) SELECT 'discord:' || i, '', 'UTC', 4, 10, 1, 18, 1,"
            " '2026-01-01 00:00:00', CASE WHEN i % ? = 0 THEN datetime(?, '-30 seconds')"
            " ELSE datetime(?, '+' || (1 + i % 1439) || ' minutes') END FROM n",
            (LEARNERS, LEARNERS // DUE_NOW, _sql(NOW), _sql(NOW)))
        conn.exec_driver_sql(
            "INSERT INTO card_state (learner_id, card_id, deck_id, card_rev, ef100, repetitions,"
            " interval, due_day, lapses, review_count, drill_pending) SELECT id, 'd/c', 'd', 1,"
            " 250, 1, 1, '2026-12-01', 0, 1, 0 FROM learner WHERE next_reminder_at <= ?",
            (_sql(NOW),))


class _Discord:
    def __init__(self):
        self.sent = 0

    async def send_dm(self, reminder) -> None:
        await asyncio.sleep(0)  # a real send yields to the loop
        self.sent += 1

    async def send_channel(self, channel_id, reminder) -> None:
        raise AssertionError("unused")


def bench_reminders(args) -> dict:
    rounds = args.n or 7
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(sqlite_url(Path(tmp) / "reminders.db"))
        engine = store.engine
        _populate(store)
        timings, claimed = [], 0
        for r in range(rounds):
            start = time.perf_counter()
            claimed = len(store.reminders.claim(NOW, f"bench{r}", NOW - LEASE, 100_000))
            timings.append((time.perf_counter() - start) * 1000)
            with engine.begin() as conn:  # release for the next round
                conn.exec_driver_sql("UPDATE learner SET reminder_claim = NULL,"
                                     " reminder_claimed_at = NULL")
        discord = _Discord()
        sweep = ReminderSweep(store, discord, clock=lambda: NOW,
                              limiter=RateLimiter(SEND_LIMIT_PER_S))
        start = time.perf_counter()
        report = asyncio.run(sweep.run())
        elapsed = time.perf_counter() - start
        engine.dispose()
    median = statistics.median(timings)
    return {
        "benchmark": "reminders",
        "learners": LEARNERS,
        "due_now": claimed,
        "claim_median_ms": round(median, 2),
        "claim_max_ms": round(max(timings), 2),
        "target_claim_ms": TARGET_CLAIM_MS,
        "sent": report.sent,
        "send_limit_per_s": SEND_LIMIT_PER_S,
        "sends_per_s": round(report.sent / elapsed, 1),
        "ok": median < TARGET_CLAIM_MS and report.sent == claimed,
    }
