"""Does remediation teach? `tutor bench remediation --json [-n LEARNERS] [--world fsrs|actr]`
(issue 39.4): the paired measurement of bot/bench/sim/remediation_study.py (remediation off,
on, a control where remedies teach nothing, and the new-card reorder alone), 400 learners
(``-n``) for 90 days in sessions of a fixed 4 minutes, on two decks:

- "synthetic": 30 misconceptions, each tested by two cards (the least remediation needs) and
  two probe cards never served; every other wrong choice is a slip no learner holds;
- "bundled": the bundled deck, where 51 of 62 mistakes are tested by one card only; its
  probes are unseen copies of its own cards.

Misconceptions are beliefs whose correction is a memory in the learners' world
(`LearnerModel.beliefs = "memory"`); seeded, so the same seed gives the same numbers.
"""

from __future__ import annotations

import time

from bot.bench.sim.deck import sim_cards
from bot.bench.sim.learner import LearnerModel
from bot.bench.sim.remediation_study import (
    StudyConfig,
    paired_study,
    probe_copies,
    synthetic_deck,
)
from bot.bench.sim.worlds import WORLDS
from content.loader import DeckLibrary

LEARNERS = 400


def run_remediation(config: StudyConfig, library: DeckLibrary | None = None,
                    decks: tuple[str, ...] = ("synthetic", "bundled")) -> dict:
    started = time.perf_counter()
    results = {}
    if "synthetic" in decks:
        cards, probes, misconceptions = synthetic_deck()
        results["synthetic"] = paired_study(cards, probes, config, misconceptions)
    if "bundled" in decks:
        cards = sim_cards((library or DeckLibrary.load()).cards(None))
        results["bundled"] = paired_study(cards, probe_copies(cards), config)
    model = LearnerModel(world=config.world, beliefs="memory")
    return {
        "benchmark": "remediation",
        "world": config.world,
        "memory_model": WORLDS[config.world].description,
        "learner_model": model.as_dict(),
        "decks": results,
        "wall_s": round(time.perf_counter() - started, 1),
    }


def bench_remediation(args) -> dict:
    config = StudyConfig(learners=args.n or LEARNERS, world=args.world or "fsrs")
    return run_remediation(config)
