"""Does remediation teach? A paired measurement in the belief model of misconceptions
(issue 39.4; `LearnerModel.beliefs = "memory"`, bot/bench/sim/learner.py).

The same learners (same seed: same profiles, eases and random streams) study the same deck
three times under the product's scheduler (SM-2, our grade map) in sessions of a fixed length:

- "off": no remediation;
- "on": remediation (scheduler/remediation.py, as the engine does it);
- "control": remediation, but a remedy teaches nothing: it is served and takes its time, the
  learner learns nothing from it. Whatever "control" gains over "off" is not the remedies'
  teaching (it is the new-card reorder, or noise);
- "reorder": remediation's other half alone: unseen cards on an open misconception first
  among the new cards, no remedies (to tell the two halves apart).

Measured per learner, on days 30 and 90 (before that day's session; day 90 after the last):

- lure rate: over the misconceptions the learner held at the start and the *probe* cards
  testing each (cards the learner has never been served), the chance that the first pick
  (no hint) is a choice standing for that misconception: the belief's transfer to a new card;
- retention on everything else: P(right first try, no hint) on the deck's cards that test
  none of the learner's misconceptions (what remediation's time might cost).

Differences are paired per learner (on - off, control - off), with a 95 % interval (normal,
over learners: mean +- 1.96 sd / sqrt(n)).

Decks: a synthetic one (`synthetic_deck`: several cards per misconception, and probe cards
never scheduled), and the bundled deck, where most mistakes are tested by one card only; its
probes are unseen copies of its own cards (the card as a learner would meet it new).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace
from statistics import NormalDist

from bot.bench.sim.deck import SimCard, Slot
from bot.bench.sim.learner import LearnerModel, SimLearner
from bot.bench.sim.policies import POLICIES, SimPolicy, SimSchedule
from bot.bench.sim.run import SimConfig, simulate

__all__ = ["ARMS", "DAYS_MEASURED", "Interval", "StudyConfig", "interval", "paired_study",
           "probe_copies", "synthetic_deck"]

DAYS_MEASURED = (30, 90)
ARMS = ("off", "on", "control", "reorder")
Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class StudyConfig:
    learners: int = 300
    seed: int = 0
    days: int = 90
    session_s: float | None = 240.0  # a session's fixed length (4 minutes)
    new_per_day: int = 10
    world: str = "fsrs"
    scheduler: str = "sm2-ours"  # the product's default (POLICIES name, without +remediation)
    days_measured: tuple[int, ...] = DAYS_MEASURED


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def as_dict(self, digits: int = 4) -> dict:
        return {"mean": round(self.mean, digits), "ci95": [round(self.low, digits),
                                                           round(self.high, digits)],
                "n": self.n}


def interval(values: list[float]) -> Interval:
    """The mean with a 95 % normal interval (sd / sqrt(n)); a single value has none."""
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(values)
    half = Z95 * statistics.stdev(values) / math.sqrt(n) if n > 1 else math.nan
    return Interval(mean, mean - half, mean + half, n)


def _choice(card_id: str, difficulty: str, misconception: str) -> SimCard:
    """Four options: the answer, the misconception's lure, and two slips (wrong choices
    standing for a mistake of this card alone, which no learner holds as a belief)."""
    slips = {f"w{i}": f"slip/{card_id}/{i}" for i in (1, 2)}
    return SimCard(card_id, difficulty, (Slot(None, ("right", "w0", *slips), "right",
                                              {"w0": misconception, **slips}),))


def synthetic_deck(misconceptions: int = 30, cards_each: int = 2,
                   probes_each: int = 2) -> tuple[list[SimCard], list[SimCard], list[str]]:
    """(scheduled cards, probe cards, the misconceptions): per misconception m_i,
    ``cards_each`` cards and ``probes_each`` probes testing it and nothing else a learner
    could hold; difficulties cycle easy, medium, hard; deck order interleaves the
    misconceptions (m0's first card, m1's first card, ...)."""
    difficulties = ("easy", "medium", "hard")
    scheduled, probes = [], []
    for k in range(max(cards_each, probes_each)):
        for i in range(misconceptions):
            difficulty = difficulties[(i + k) % 3]
            if k < cards_each:
                scheduled.append(_choice(f"synthetic/m{i}-{k}", difficulty, f"m{i}"))
            if k < probes_each:
                probes.append(_choice(f"probe/m{i}-{k}", difficulty, f"m{i}"))
    return scheduled, probes, [f"m{i}" for i in range(misconceptions)]


def probe_copies(cards: list[SimCard]) -> list[SimCard]:
    """Unseen copies of the cards (the card as a learner meets it new)."""
    return [replace(card, id=f"probe/{card.id}") for card in cards if card.mistake_ids]


def _measure(learner: SimLearner, day: int, cards: list[SimCard],
             probes: list[SimCard]) -> dict:
    at = float(day)
    held = learner.profile.misconceptions
    tested = {m for card in probes for m in card.mistake_ids}
    lures = [p for m in sorted(held) for card in probes if m in card.mistake_ids
             if (p := learner.lure_probability(card, m, at)) is not None]
    active = [learner.active_probability(m, at) for m in sorted(held & tested)]
    others = [learner.first_try_probability(card, at) for card in cards
              if held.isdisjoint(card.mistake_ids)]
    return {"lure": statistics.fmean(lures) if lures else None,
            "active": statistics.fmean(active) if active else None,
            "other_retention": statistics.fmean(others) if others else None}


class _ReorderOnly(SimSchedule):
    """Remediation's new-card reorder without its remedies."""

    def _remedy(self, day: int, answered: str, shown: tuple[str, ...]) -> None:
        return None


@dataclass(frozen=True)
class _ReorderPolicy:
    policy: SimPolicy
    name: str = "reorder-only"

    def schedule(self, cards: list[SimCard], new_per_day: int, key: str) -> SimSchedule:
        p = self.policy
        return _ReorderOnly(cards, new_per_day, p.grade, p.active, remediation=True)

    def describe(self) -> str:
        return "remediation's new-card reorder without remedies"


def _run_arm(arm: str, cards: list[SimCard], probes: list[SimCard], config: StudyConfig,
             holdable: list[str] | None) -> tuple[dict[int, dict], dict]:
    name = config.scheduler + ("" if arm == "off" else "+remediation")
    policy = _ReorderPolicy(POLICIES[name]) if arm == "reorder" else POLICIES[name]
    model = replace(LearnerModel(), world=config.world, beliefs="memory",
                    remedies_teach=arm != "control")
    sim = SimConfig(learners=config.learners, days=config.days, seed=config.seed,
                    new_per_day=config.new_per_day, session_s=config.session_s)
    seen: dict[int, dict] = {}

    def observe(learner: SimLearner, day: int) -> None:
        seen.setdefault(learner.profile.index, {})[day] = _measure(learner, day, cards, probes)

    outcome = simulate(policy, cards, sim, model, observe=observe,
                       observe_days=config.days_measured, holdable=holdable)
    totals = {"policy": policy.name, "serves": dict(outcome.serves),
              "serves_per_learner_day": round(outcome.reviews / (config.learners * config.days),
                                              2),
              "session_min_per_learner_day": round(
                  outcome.session_ms / (config.learners * config.days) / 60_000, 2),
              "days_cut_by_session_length": round(
                  outcome.cut_days / (config.learners * config.days), 3),
              "retention_day_end": round(outcome.retention, 4),
              "misconceptions_held_per_learner": {
                  "start": round(outcome.misconceptions_start, 3),
                  "end": round(outcome.misconceptions_end, 3)},
              "wall_s": round(outcome.wall_s, 1)}
    return seen, totals


def paired_study(cards: list[SimCard], probes: list[SimCard], config: StudyConfig,
                 holdable: list[str] | None = None) -> dict:
    """The three arms on the same learners; each measure per arm and paired against "off".
    ``holdable``: the mistakes a learner may hold (default: every one the deck tests)."""
    started = time.perf_counter()
    runs = {arm: _run_arm(arm, cards, probes, config, holdable) for arm in ARMS}
    measures: dict = {}
    for day in config.days_measured:
        for measure in ("lure", "active", "other_retention"):
            key = f"{measure}_day{day}"
            per_arm = {arm: {i: v[day][measure] for i, v in runs[arm][0].items()}
                       for arm in ARMS}
            both = [i for i in per_arm["off"]
                    if all(per_arm[arm].get(i) is not None for arm in ARMS)]
            measures[key] = {
                **{arm: interval([per_arm[arm][i] for i in both]).as_dict() for arm in ARMS},
                **{f"{arm}-off": interval([per_arm[arm][i] - per_arm["off"][i]
                                           for i in both]).as_dict() for arm in ARMS[1:]},
            }
    tested = {m: 0 for m in holdable} if holdable is not None else {}
    for card in cards:
        for m in card.mistake_ids:
            if holdable is None or m in tested:
                tested[m] = tested.get(m, 0) + 1
    return {
        "config": {**config.__dict__, "cards": len(cards), "probes": len(probes),
                   "misconceptions": len(tested),
                   "tested_by_one_card": sum(n == 1 for n in tested.values())},
        "measures": measures,
        "arms": {arm: runs[arm][1] for arm in ARMS},
        "wall_s": round(time.perf_counter() - started, 1),
    }
