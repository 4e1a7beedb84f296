"""The answer path as a learner feels it: N learners at once get a card and answer it,
round after round, through the real `tutor run` process (discord.py's own HTTP client,
gateway and command tree) against the loopback offline Discord (`bot/offline_discord.py`).

Reports click-to-acknowledgement p50/p99 (from the moment the interaction is dispatched to
the bot's callback), interactions and answers per second, and the bot's worst event-loop
lag (its own `tutor_event_loop_lag_max_seconds`), on SQLite, and on PostgreSQL when
BENCH_POSTGRES_URL names a database.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bot.offline_discord import OfflineDiscord
from scheduler.db import sqlite_url

LEARNERS = 200
ROUNDS = 3  # each round: /practice, then an answer click
TARGET_P99_MS = 100.0
TARGET_LAG_MS = 50.0
ROOT = Path(__file__).resolve().parents[2]


def bench_discord(args) -> dict:
    learners = args.n or LEARNERS
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"sqlite": asyncio.run(_measure(sqlite_url(Path(tmp) / "bench.db"),
                                               learners, Path(tmp)))}
        if url := os.environ.get("BENCH_POSTGRES_URL"):
            runs["postgresql"] = asyncio.run(_measure(url, learners, Path(tmp)))
    ok = all("error" not in r and r["p99_ms"] < TARGET_P99_MS
             and r["loop_lag_max_ms"] < TARGET_LAG_MS for r in runs.values())
    return {"benchmark": "discord", "learners": learners, "rounds": ROUNDS, **runs,
            "target_p99_ms": TARGET_P99_MS, "target_loop_lag_ms": TARGET_LAG_MS, "ok": ok}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _metric(port: int, name: str) -> float | None:
    async with aiohttp.ClientSession() as session, session.get(
            f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    found = re.search(rf"^{name} ([0-9.e+-]+)$", text, re.M)
    return float(found.group(1)) if found else None


async def _measure(db_url: str, learners: int, tmp: Path) -> dict:
    server = await OfflineDiscord().start()
    users = [server.create_user(f"learner{i}") for i in range(learners)]
    guild = server.create_guild("Bench", members=users)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCORD_")}
    env.update(DISCORD_TOKEN="bench-token", DISCORD_API_BASE_URL=server.api_base,
               DISCORD_GATEWAY_URL=server.gateway_url, DATABASE_URL=db_url,
               PYTHONPATH=str(ROOT), SANDBOX="false", REMINDERS="false", LOG_LEVEL="WARNING",
               METRICS_PORT=str(port))
    log = (tmp / "bench-bot.log").open("wb")
    bot = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "run", cwd=tmp,
                                               env=env, stdout=log, stderr=log)
    try:
        await server.wait_ready(timeout=120)
        await server.wait_commands(timeout=60)
        acks: list[float] = []

        async def learner(user: dict) -> None:
            for _ in range(ROUNDS):
                start = time.perf_counter()
                card = await server.slash(user, "practice", {"topic": "concept"},
                                          guild_id=guild["id"], timeout=60)
                acks.append(time.perf_counter() - start)
                option = next(c["custom_id"] for row in card.components
                              for c in row["components"]
                              if c.get("custom_id", "").startswith("srs:opt:"))
                start = time.perf_counter()
                await server.click(user, card.message, option, timeout=60)
                acks.append(time.perf_counter() - start)

        start = time.perf_counter()
        await asyncio.gather(*(learner(user) for user in users))
        wall = time.perf_counter() - start
        lag = await _metric(port, "tutor_event_loop_lag_max_seconds")
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the other run still runs
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        bot.terminate()
        await bot.wait()
        log.close()
        await server.stop()
    ms = sorted(a * 1000 for a in acks)
    return {
        "interactions": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1),
        "interactions_per_s": round(len(ms) / wall, 1),
        "answers_per_s": round(learners * ROUNDS / wall, 1),
        "loop_lag_max_ms": round((lag or 0.0) * 1000, 1),
    }
