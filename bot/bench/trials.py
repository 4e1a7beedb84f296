"""A learner's correct answer while hostile deck uploads are tried (issue 37.1).

As many uploads at once as the sandbox has slots, each a deck of 24 behaviour cards tried
in turn as the engine tries them (`SandboxJudge.vet`: `mode: vet`, keyed `trial:{server}`),
every card's cases sleeping 9 s (under every limit). A learner sends the train-loop card's
reference 3 s into the attack; the time to its verdict is the measure (target: 20 s).
A sandbox service of its own with the product's limits and slots; `--fast` naps 2 s.
"""

from __future__ import annotations

import asyncio
import time

from bot.bench.softmax_exercise import CASES, REFERENCE, softmax_block
from bot.sandbox.client.client import SandboxBusy, SandboxClient
from bot.sandbox.protocol import OK
from content.loader import DeckLibrary

CARD = "gradient-accumulation/train-loop"
CARDS_PER_DECK = 24  # exercises.MAX_EXERCISES
NAP_S, FAST_NAP_S = 9.0, 2.0
LEARNER_AFTER_S = 3.0
TARGET_S = 20.0


def slow_exercise(nap_s: float) -> dict:
    """The softmax exercise, its cases sleeping `nap_s` first in each of its runs."""
    cases = CASES.replace("def cases(rng):\n",
                          f"def cases(rng):\n    __import__('time').sleep({nap_s})\n", 1)
    return softmax_block(cases=cases)


async def _upload(client: SandboxClient, server: int, nap_s: float, tried: list) -> None:
    """One hostile upload: its cards tried one after another, as the engine does."""
    for _ in range(CARDS_PER_DECK):
        try:
            result = await client.run(REFERENCE, learner=f"trial:{server}", mode="vet",
                                      checker="behaviour", behaviour=slow_exercise(nap_s))
            tried.append(result.unjudged or result.status)
        except SandboxBusy:
            tried.append("refused")


async def _measure(nap_s: float) -> dict:
    card = DeckLibrary.load().card(CARD)
    client = SandboxClient(runs_per_minute=10**9, max_queue=256)
    info = await client.start()
    try:
        await client.run(card.reference, mode="check", checker=card.checker)  # warm
        tried: list[str] = []
        uploads = [asyncio.ensure_future(_upload(client, server, nap_s, tried))
                   for server in range(info.slots)]
        await asyncio.sleep(LEARNER_AFTER_S)
        started = time.perf_counter()
        result = await client.run(card.reference, learner="learner", mode="check",
                                  checker=card.checker)
        verdict_s = time.perf_counter() - started
        for upload in uploads:
            upload.cancel()
        await asyncio.gather(*uploads, return_exceptions=True)
    finally:
        await client.stop()
    passed = result.status == OK and result.report is not None and result.report.passed
    return {"slots": info.slots, "uploads": len(uploads), "verdict_s": round(verdict_s, 2),
            "learner_status": result.unjudged or result.status, "passed": bool(passed),
            "exercises_tried_meanwhile": {k: tried.count(k) for k in sorted(set(tried))}}


def bench_trials(args) -> dict:
    nap_s = FAST_NAP_S if getattr(args, "fast", False) else NAP_S
    measured = asyncio.run(_measure(nap_s))
    return {"benchmark": "trials", "nap_s": nap_s, "cards_per_deck": CARDS_PER_DECK,
            "learner_after_s": LEARNER_AFTER_S, **measured, "target_s": TARGET_S,
            "ok": measured["passed"] and measured["verdict_s"] < TARGET_S}
