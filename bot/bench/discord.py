"""The answer path as a learner feels it, through the real `tutor run` process
(discord.py's own HTTP client, gateway and command tree) against the loopback offline
Discord (`bot/bench/offline_discord/`), on SQLite, and on PostgreSQL when BENCH_POSTGRES_URL
names a database; beside it, in alternating order (`--reps` times each), the baseline: a
bare discord.py bot (`bare_bot.py`) that answers /practice with four buttons and a click
with an edit, without and with one durable SQLite write per click. `burst_ratio_to_bare`
is our burst throughput over the bare bot's with its write (medians). Two loads per bot,
one after the other, each bot on a fresh offline Discord and database:

- paced: N learners at once, each getting a card (/practice) and answering it, round after
  round, with a reading pause between clicks (1-3 s, seeded): the targets apply here;
- burst: every learner clicks an answer at the same instant (point 12 of issue 13): the
  bot's single event loop takes them one by one, so the last waits for all the others.

Each reports click-to-acknowledgement p50/p99 (from the moment the interaction is
dispatched to the bot's callback), interactions and answers per second, the bot process's
CPU time per interaction (from /proc), and for ours the event-loop lag during that load,
from its own `tutor_event_loop_lag_seconds` histogram: the bucket bound every 10 ms tick
stayed under, and how many ticks were over 50 ms.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import re
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bot.bench.offline_discord import OfflineDiscord
from scheduler.storage.db import sqlite_url

LEARNERS = 200
ROUNDS = 3  # paced: each round is /practice, a pause, an answer click, a pause
THINK_S = (1.0, 3.0)  # a learner reading a card or its feedback before the next click
REPS = 3  # each bot's measurements, in alternating order
BOTS = ("ours", "bare", "bare_sqlite")
TARGET_P99_MS = 50.0
TARGET_LAG_MS = 50.0
TARGET_BURST_RATIO = 0.8  # of the bare bot's burst throughput with its one SQLite write
LAG_METRIC = "tutor_event_loop_lag_seconds"
ROOT = Path(__file__).resolve().parents[2]


def bench_discord(args) -> dict:
    learners, reps = args.n or LEARNERS, getattr(args, "reps", None) or REPS
    runs: dict[str, list[dict]] = {bot: [] for bot in BOTS}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            for bot in BOTS:
                runs[bot].append(_isolated(_measure(
                    bot, sqlite_url(Path(tmp) / f"{bot}-{rep}.db"), learners, Path(tmp))))
        postgres = _isolated(_measure("ours", url, learners, Path(tmp))) \
            if (url := os.environ.get("BENCH_POSTGRES_URL")) else None
    bots = {bot: _medians(measured) for bot, measured in runs.items()}
    ours, baseline = bots["ours"], bots["bare_sqlite"]
    ratio = None if "error" in ours or "error" in baseline else round(
        ours["burst"]["answers_per_s"] / baseline["burst"]["answers_per_s"], 3)
    databases = {"sqlite": ours, **({"postgresql": postgres} if postgres else {})}
    ok = ratio is not None and ratio >= TARGET_BURST_RATIO and all(
        "error" not in r and r["paced"]["p99_ms"] < TARGET_P99_MS
        and r["paced"]["loop_lag_max_ms"] <= TARGET_LAG_MS for r in databases.values())
    return {"benchmark": "discord", "learners": learners, "rounds": ROUNDS, "reps": reps,
            "think_s": list(THINK_S), **databases,
            "bots": {bot: {**bots[bot], "runs": runs[bot]} for bot in BOTS},
            "burst_ratio_to_bare": ratio, "target_burst_ratio": TARGET_BURST_RATIO,
            "target_p99_ms": TARGET_P99_MS, "target_loop_lag_ms": TARGET_LAG_MS, "ok": ok}


def _isolated(measurement) -> dict:
    """Run one measurement with the driver's own collector out of it: the previous bot's
    garbage collected before, no collection pausing the learners' clocks during."""
    gc.collect()
    gc.disable()
    try:
        return asyncio.run(measurement)
    finally:
        gc.enable()
        gc.collect()


def _medians(measured: list[dict]) -> dict:
    """Each figure's median over the repetitions (an error: the first one)."""
    if failed := [m for m in measured if "error" in m]:
        return failed[0]
    return {load: {key: _median([m[load][key] for m in measured])
                   for key in measured[0][load]} for load in ("paced", "burst")}


def _median(values: list):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _lag_buckets(port: int) -> dict[float, float]:
    """The bot's loop-lag histogram: cumulative tick counts by upper bound (seconds)."""
    async with aiohttp.ClientSession() as session, session.get(
            f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    return {float(le): float(n) for le, n in re.findall(
        rf'^{LAG_METRIC}_bucket{{le="([^"]+)"}} ([0-9.e+-]+)$', text, re.M)}


def _lag_between(before: dict[float, float], after: dict[float, float]) -> dict:
    ticks = {le: after[le] - before.get(le, 0.0) for le in after}
    total = ticks.get(float("inf"), 0.0)
    bound = min((le for le, n in ticks.items() if n >= total), default=0.0)
    over = total - max((n for le, n in ticks.items() if le <= TARGET_LAG_MS / 1000),
                       default=0.0)
    return {"loop_lag_max_ms": bound * 1000 if bound != float("inf") else None,
            "loop_ticks_over_50ms": int(over)}


def _options(card) -> list[str]:
    return [c["custom_id"] for row in card.components for c in row["components"]
            if c.get("custom_id", "").startswith("srs:opt:")]


def _cpu_s(pid: int) -> float:
    """The process's user and system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _summary(acks: list[float], answers: int, wall: float, lag: dict, cpu_s: float) -> dict:
    ms = sorted(a * 1000 for a in acks)
    return {
        "interactions": len(ms),
        "cpu_ms_per_interaction": round(cpu_s * 1000 / len(ms), 3),
        "p50_ms": round(statistics.median(ms), 1),
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1),
        "max_ms": round(ms[-1], 1),
        "interactions_per_s": round(len(ms) / wall, 1),
        "answers_per_s": round(answers / wall, 1),
        **lag,
    }


def _command(bot: str, db_url: str) -> list[str]:
    if bot == "ours":
        return [sys.executable, "-m", "bot", "run"]
    command = [sys.executable, "-m", "bot.bench.bare_bot"]
    if bot == "bare_sqlite":
        command += ["--sqlite", db_url.removeprefix("sqlite:///")]
    return command


async def _measure(bot_kind: str, db_url: str, learners: int, tmp: Path) -> dict:
    server = await OfflineDiscord().start(backlog=4 * learners)
    users = [server.create_user(f"learner{i}") for i in range(learners)]
    guild = server.create_guild("Bench", members=users)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCORD_")}
    env.update(DISCORD_TOKEN="bench-token", DISCORD_API_BASE_URL=server.api_base,
               DISCORD_GATEWAY_URL=server.gateway_url, DATABASE_URL=db_url,
               PYTHONPATH=str(ROOT), SANDBOX="false", REMINDERS="false", LOG_LEVEL="WARNING",
               METRICS_PORT=str(port))
    log = (tmp / f"bench-{bot_kind}.log").open("ab")
    bot = await asyncio.create_subprocess_exec(*_command(bot_kind, db_url), cwd=tmp,
                                               env=env, stdout=log, stderr=log)
    ours = bot_kind == "ours"

    async def lag() -> dict:  # only ours reports its loop's lag
        return await _lag_buckets(port) if ours else {}

    def lag_between(before: dict, after: dict) -> dict:
        return _lag_between(before, after) if ours else {}

    rng = random.Random(13)

    async def timed(acks: list[float], call):
        start = time.perf_counter()
        record = await call
        acks.append(time.perf_counter() - start)
        return record

    def practice(user, acks):
        return timed(acks, server.slash(user, "practice", {"topic": "concept"},
                                        guild_id=guild["id"], timeout=60))

    try:
        await server.wait_ready(timeout=120)
        await server.wait_commands(timeout=60)

        paced: list[float] = []

        async def learner(user: dict) -> None:
            await asyncio.sleep(rng.uniform(0, THINK_S[1]))  # learners arrive over time
            for _ in range(ROUNDS):
                card = await practice(user, paced)
                await asyncio.sleep(rng.uniform(*THINK_S))
                await timed(paced, server.click(user, card.message, _options(card)[0],
                                                timeout=60))
                await asyncio.sleep(rng.uniform(*THINK_S))

        before, cpu, start = await lag(), _cpu_s(bot.pid), time.perf_counter()
        await asyncio.gather(*(learner(user) for user in users))
        wall = time.perf_counter() - start
        runs = {"paced": _summary(paced, learners * ROUNDS, wall,
                                  lag_between(before, await lag()), _cpu_s(bot.pid) - cpu)}

        ready = [await practice(user, []) for user in users]  # one card each, one by one
        burst: list[float] = []
        before, cpu, start = await lag(), _cpu_s(bot.pid), time.perf_counter()
        await asyncio.gather(*(timed(burst, server.click(user, card.message,
                                                         _options(card)[1], timeout=60))
                               for user, card in zip(users, ready, strict=True)))
        wall = time.perf_counter() - start
        runs["burst"] = _summary(burst, learners, wall, lag_between(before, await lag()),
                                 _cpu_s(bot.pid) - cpu)
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the other run still runs
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        bot.terminate()
        await bot.wait()
        log.close()
        await server.stop()
    return runs
