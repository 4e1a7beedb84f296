"""The weekly leaderboard of a big server: 10,000 learners and 1,000,000 review logs
(a year of them) on SQLite, answered from the (guild_id, reviewed_at) index."""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bot.app import open_store
from scheduler import leaderboard as lb
from scheduler.storage.db import sqlite_url

GUILD = 1234567890123456789
LEARNERS = 10_000
LOGS = 1_000_000
TARGET_MS = 20.0
NOW = datetime(2026, 12, 2, 18, tzinfo=UTC)


def _populate(engine) -> None:
    seconds_in_a_year = 365 * 86_400
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
            " INSERT INTO learner (external_id, display_name, timezone, rollover_hour,"
            " new_per_day, reminders_enabled, reminder_hour, leaderboard_visible, created_at)"
            " SELECT 'discord:' || i, 'learner' || i, 'UTC', 4, 10, 0, 18, i % 50 != 0,"
            " '2025-01-01 00:00:00' FROM n", (LEARNERS,))
        conn.exec_driver_sql(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
            " INSERT INTO review_log (answer_id, learner_id, card_id, deck_id, card_rev,"
            " guild_id, kind, reviewed_at, study_day, quality, correct, attempts, hint_used,"
            " latency_ms, chosen, mistake_ids, ef100_after, interval_after, due_day_after)"
            " SELECT 'a' || i, 1 + (i * 7919) % ?, 'd/c' || (i % 11), 'd', 1, ?,"
            " CASE WHEN i % 5 = 0 THEN 'new' WHEN i % 7 = 0 THEN 'drill' ELSE 'review' END,"
            " strftime('%Y-%m-%d %H:%M:%f', ?, '-' || ((i * 104729) % ?) || ' seconds'),"
            " '2026-01-01', 5, i % 4 != 0, 1 + (i % 3 = 0), i % 9 = 0, 4000, '[]', '[]',"
            " 250, 1, '2026-01-02' FROM n",
            (LOGS, LEARNERS, GUILD, NOW.strftime("%Y-%m-%d %H:%M:%S"), seconds_in_a_year))


def bench_leaderboard(args) -> dict:
    rounds = args.n or 15
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(sqlite_url(Path(tmp) / "board.db"))
        engine = store.engine
        _populate(engine)
        since = lb.week_start(NOW, "UTC")
        store.boards.standings(GUILD, since)  # warm the page cache
        timings = []
        for _ in range(rounds):
            start = time.perf_counter()
            result = store.boards.standings(GUILD, since, caller_id=4242)
            timings.append((time.perf_counter() - start) * 1000)
        with engine.connect() as conn:
            in_week = conn.exec_driver_sql(
                "SELECT count(*) FROM review_log WHERE guild_id = ? AND reviewed_at >= ?",
                (GUILD, since.strftime("%Y-%m-%d %H:%M:%S"))).scalar()
        engine.dispose()
    median = statistics.median(timings)
    return {
        "benchmark": "leaderboard",
        "learners": LEARNERS,
        "review_logs": LOGS,
        "logs_this_week": in_week,
        "ranked_learners": result.total,
        "weekly_board_median_ms": round(median, 2),
        "weekly_board_max_ms": round(max(timings), 2),
        "target_ms": TARGET_MS,
        "ok": median < TARGET_MS,
    }
