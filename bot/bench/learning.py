"""Simulated learners under each scheduling policy: what they retain, at what cost.

`tutor bench learning --json [-n LEARNERS]`: 1,000 learners (``-n``) study the bundled deck's
multiple-choice and fill-in cards for 90 days under every policy in bot.bench.sim.policies
(sm2-ours, sm2-naive, fsrs, and each of them +remediation), seeded: the same seed gives the
same numbers. The models and their parameters are in bot/bench/sim/ (memory.py, learner.py) and are
reported with the run; "table" puts the policies' headline numbers side by side.

``--world actr`` runs the same learners in another memory model (bot/bench/sim/worlds.py:
ACT-R's activation, not FSRS's own model; issue 39.3); ``fsrs`` is the default.
"""

from __future__ import annotations

import time
from dataclasses import replace

from bot.bench.sim.deck import sim_cards
from bot.bench.sim.learner import LearnerModel
from bot.bench.sim.policies import POLICIES
from bot.bench.sim.run import SimConfig, config_dict, simulate
from bot.bench.sim.worlds import WORLDS
from content.loader import DeckLibrary

RETENTION = ("P(right first try, no hint) on the morning after the last day: recall under "
             "the memory model or a lucky guess; never-met cards count with their prior")


def run_learning(config: SimConfig, library: DeckLibrary | None = None,
                 model: LearnerModel | None = None) -> dict:
    library = library or DeckLibrary.load()
    model = model or LearnerModel()
    cards = sim_cards(library.cards(None))
    started = time.perf_counter()
    policies = {}
    for name, policy in POLICIES.items():
        outcome = simulate(policy, cards, config, model)
        policies[name] = {"description": policy.describe(),
                          **outcome.report(len(cards), config.learners, config.days)}
    costs = {name: p["reviews_per_retained_card"] for name, p in policies.items()
             if p["reviews_per_retained_card"]}
    retention = {name: p["retention_day_end"] for name, p in policies.items()}
    return {
        "benchmark": "learning",
        **config_dict(config),
        "cards": len(cards),
        "driver": "direct: scheduler/sm2.py, scheduler/fsrs_review.py, scheduler/grading.py "
                  "and scheduler/remediation.py with bot/engine/tutor.py's rules "
                  "(tests/bench/test_learning_sim.py holds it to the engine's decisions, SM-2 and "
                  "FSRS, remediation on and off)",
        "world": model.world,
        "memory_model": WORLDS[model.world].description,
        "learner_model": model.as_dict(),
        "retention_definition": RETENTION,
        "policies": policies,
        "table": [_row(name, p) for name, p in policies.items()],
        "fewest_reviews_per_retained_card": min(costs, key=costs.get) if costs else None,
        "best_retention": max(retention, key=retention.get) if retention else None,
        "wall_s": round(time.perf_counter() - started, 2),
    }


def _row(name: str, report: dict) -> dict:
    """One policy's headline numbers, for reading the policies side by side."""
    return {"policy": name, "retention": report["retention_day_end"],
            "total_reviews": report["total_reviews"],
            "reviews_per_retained_card": report["reviews_per_retained_card"],
            "days_to_three": report["days_to_three_recalls"]["median"]}


def bench_learning(args) -> dict:
    model = replace(LearnerModel(), world=getattr(args, "world", None) or "fsrs")
    return run_learning(SimConfig(learners=args.n or SimConfig.learners), model=model)
