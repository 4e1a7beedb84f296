"""Time per code check through the warm sandbox, isolation included: the train-loop checker
on a correct loop and a buggy one, and a behaviour check (the author's run, the learner's
run and the comparison) on a correct softmax and a wrong one."""

from __future__ import annotations

import asyncio
import statistics
import time

from bot.bench.softmax_exercise import REFERENCE, VERSIONS, softmax_block
from bot.sandbox.client.client import SandboxClient
from content.loader import DeckLibrary

CARD = "gradient-accumulation/train-loop"
TARGET_MEDIAN_MS = 150.0


async def _time_checks(client: SandboxClient, code: str, checker: str, runs: int,
                       **options) -> list:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        result = await client.run(code, mode="check", checker=checker, **options)
        timings.append((time.perf_counter() - start) * 1000)
        if result.report is None:
            raise RuntimeError(f"check did not finish: {result}")
    return timings


def bench_checker(args) -> dict:
    card = DeckLibrary.load().card(CARD)
    buggy = card.reference.replace("(i + 1) % accumulation_steps", "i % accumulation_steps")
    runs = args.n or 30

    async def measure() -> tuple[list, list, list]:
        client = SandboxClient(runs_per_minute=10**9)
        await client.start()
        try:
            await _time_checks(client, card.reference, card.checker, 3)  # warm
            behaviour = []
            for code in (REFERENCE, VERSIONS["softmax_overflow"]):
                behaviour += await _time_checks(client, code, "behaviour", runs,
                                                behaviour=softmax_block())
            return (await _time_checks(client, card.reference, card.checker, runs),
                    await _time_checks(client, buggy, card.checker, runs), behaviour)
        finally:
            await client.stop()

    correct, wrong, behaviour = asyncio.run(measure())
    median = statistics.median(correct + wrong)
    return {
        "benchmark": "checker",
        "card": CARD,
        "checks": len(correct) + len(wrong),
        "correct_loop_median_ms": round(statistics.median(correct), 2),
        "buggy_loop_median_ms": round(statistics.median(wrong), 2),
        "median_ms": round(median, 2),
        "p95_ms": round(sorted(correct + wrong)[int(0.95 * (len(correct) + len(wrong))) - 1], 2),
        "behaviour": {"exercise": "stable softmax (a correct and a wrong answer)",
                      "checks": len(behaviour),
                      "median_ms": round(statistics.median(behaviour), 2)},
        "target_median_ms": TARGET_MEDIAN_MS,
        "ok": max(median, statistics.median(behaviour)) < TARGET_MEDIAN_MS,
    }
