"""The weekly leaderboard of a big server: 10,000 learners and 1,000,000 review logs
(a year of them, bot/bench/big_server.py) on SQLite, answered from the (guild_id,
reviewed_at) index."""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bot.app import open_store
from bot.bench.big_server import fill
from scheduler import leaderboard as lb
from scheduler.storage.db import sqlite_url

GUILD = 1234567890123456789
LEARNERS = 10_000
LOGS = 1_000_000
TARGET_MS = 20.0
NOW = datetime(2026, 12, 2, 18, tzinfo=UTC)


def _populate(engine) -> None:
    fill(engine, GUILD, NOW, learners=LEARNERS, logs=LOGS,
         cards=[("d", f"d/c{k}", 1, "m") for k in range(11)])


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
