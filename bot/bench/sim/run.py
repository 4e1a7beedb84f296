"""The learning simulation: learners study day by day under a policy; what they retain.

Each study day a learner sits one session at noon: the schedule's cards one after another
(``gap_s`` between them) until it has none left. Every learner exists once per policy with
the same profile and random stream, so policies meet the same population.

Measured per policy:

- retention: on day ``days`` (the morning after the last simulated day, at noon), the mean
  over learners and cards of P(a right first try, no hint): recall under the memory model, or
  a lucky guess (`SimLearner.first_try_probability`); a card never met counts with its prior;
- recall: the same without lucky guesses (the memory model alone);
- reviews: every card served (new, review and drill), and reviews per retained card;
- days until a card is first recalled three times in a row: counting each card's first serve
  of a study day (truly recalled, right on the first try), from the day the card was met;
  cards that never get there count as never (a percentile that lands on them is null).

``session_s`` bounds a session (None: until the schedule has nothing left): no card is served
once that much time has passed, so what comes late in the schedule's order waits for
another day. ``observe(learner, day)`` looks at each learner on the days asked for (before
that day's session; ``days`` itself after the last one).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field

from bot.bench.sim.deck import SimCard
from bot.bench.sim.learner import MS_PER_DAY, LearnerModel, Profile, SimLearner, card_eases
from bot.bench.sim.policies import Policy

__all__ = ["Outcome", "SimConfig", "percentile", "simulate"]


@dataclass(frozen=True)
class SimConfig:
    learners: int = 1000
    days: int = 90
    seed: int = 0
    new_per_day: int = 10  # the product's default (scheduler/storage/models.py)
    gap_s: float = 5.0  # reading the feedback before the next card
    max_serves_per_day: int = 500  # a safety stop; never reached with these models
    session_s: float | None = None  # a session's length; None: unbounded


@dataclass
class Outcome:
    """One policy's run. ``log``: (learner, day, card, kind, quality, answer) per serve, if
    asked (the `Answer`: attempts, hint, latency; bot/bench/fsrs_evaluate.py grades it
    other ways)."""

    policy: str
    retention: float = 0.0
    recall: float = 0.0
    serves: dict[str, int] = field(default_factory=lambda: {"new": 0, "review": 0, "drill": 0})
    attempts: int = 0
    days_to_three: list[float] = field(default_factory=list)
    misconceptions_start: float = 0.0
    misconceptions_end: float = 0.0
    capped_days: int = 0
    cut_days: int = 0  # days the session's length ended with cards left to serve
    session_ms: int = 0  # all sessions' time, summed
    wall_s: float = 0.0
    log: list[tuple] | None = None

    @property
    def reviews(self) -> int:
        return sum(self.serves.values())

    def report(self, cards: int, learners: int, days: int) -> dict:
        retained = self.retention * cards * learners
        reached = [d for d in self.days_to_three if math.isfinite(d)]
        return {
            "retention_day_end": round(self.retention, 4),
            "recall_day_end": round(self.recall, 4),
            "total_reviews": self.reviews,
            "reviews_by_kind": dict(self.serves),
            "reviews_per_learner_day": round(self.reviews / (learners * days), 3)
            if learners and days else None,
            "answer_attempts": self.attempts,
            "reviews_per_retained_card": round(self.reviews / retained, 3) if retained else None,
            "days_to_three_recalls": {
                "median": percentile(self.days_to_three, 0.5),
                "p90": percentile(self.days_to_three, 0.9),
                "reached_fraction": round(len(reached) / len(self.days_to_three), 4)
                if self.days_to_three else 0.0,
            },
            "misconceptions_held_per_learner": {"start": round(self.misconceptions_start, 3),
                                                "end": round(self.misconceptions_end, 3)},
            "capped_days": self.capped_days,
            "wall_s": round(self.wall_s, 2),
        }


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile; None when it falls on a value that never happened (inf)."""
    if not values:
        return None
    ordered = sorted(values)
    value = ordered[max(0, math.ceil(q * len(ordered)) - 1)]
    return value if math.isfinite(value) else None


def population(config: SimConfig, cards: list[SimCard], model: LearnerModel,
               holdable: Collection[str] | None = None
               ) -> tuple[list[Profile], dict[str, float]]:
    """The learners and the cards' eases; a learner may hold each of ``holdable`` (default:
    every mistake the deck tests) as a misconception."""
    mistakes = sorted({m for card in cards for m in card.mistake_ids}
                      if holdable is None else holdable)
    profiles = [Profile.draw(config.seed, i, mistakes, model) for i in range(config.learners)]
    return profiles, card_eases(config.seed, cards, model)


def simulate(policy: Policy, cards: list[SimCard], config: SimConfig,
             model: LearnerModel | None = None, *, keep_log: bool = False,
             observe: Callable[[SimLearner, int], None] | None = None,
             observe_days: Collection[int] = (),
             holdable: Collection[str] | None = None) -> Outcome:
    model = model or LearnerModel()
    session_ms = None if config.session_s is None else round(config.session_s * 1000)
    started = time.perf_counter()
    profiles, eases = population(config, cards, model, holdable)
    by_id = {card.id: card for card in cards}
    out = Outcome(policy.name, log=[] if keep_log else None)
    gap_ms = round(config.gap_s * 1000)
    first_try_sum = recall_sum = 0.0
    for profile in profiles:
        learner = SimLearner(profile, model, eases, config.seed)
        schedule = policy.schedule(cards, config.new_per_day, f"sim:{profile.index}")
        out.misconceptions_start += learner.misconceptions_held(0.0)
        met: dict[str, int] = {}  # card -> day first met
        streak: dict[str, int] = {}
        three: dict[str, int] = {}  # card -> days from meeting it to 3 recalls in a row
        for day in range(config.days):
            if observe is not None and day in observe_days:
                observe(learner, day)
            at_ms = 0
            first_today: set[str] = set()
            for _ in range(config.max_serves_per_day):
                if session_ms is not None and at_ms >= session_ms:
                    out.cut_days += schedule.next_card(day, at_ms) is not None
                    break
                pick = schedule.next_card(day, at_ms)
                if pick is None:
                    break
                card = by_id[pick.card_id]
                answer = learner.answer(card, day + at_ms / MS_PER_DAY, pick.kind == "remedy")
                quality = schedule.record(day, at_ms, pick, card, answer)
                out.serves[pick.kind] = out.serves.get(pick.kind, 0) + 1
                out.attempts += answer.attempts
                if keep_log:
                    out.log.append((profile.index, day, pick.card_id, pick.kind, quality, answer))
                if card.id not in first_today:
                    first_today.add(card.id)
                    met.setdefault(card.id, day)
                    hit = answer.recalled and answer.correct and answer.attempts == 1
                    streak[card.id] = streak.get(card.id, 0) + 1 if hit else 0
                    if streak[card.id] >= 3 and card.id not in three:
                        three[card.id] = day - met[card.id]
                at_ms += answer.duration_ms + gap_ms
            else:
                out.capped_days += 1
            out.session_ms += at_ms
        end = float(config.days)
        if observe is not None and config.days in observe_days:
            observe(learner, config.days)
        for card in cards:
            first_try_sum += learner.first_try_probability(card, end)
            recall_sum += learner.recall_probability(card, end)
        out.days_to_three += [three.get(cid, math.inf) for cid in met]
        out.misconceptions_end += learner.misconceptions_held(end)
    n = len(profiles) * len(cards)
    out.retention = first_try_sum / n if n else 0.0
    out.recall = recall_sum / n if n else 0.0
    if profiles:
        out.misconceptions_start /= len(profiles)
        out.misconceptions_end /= len(profiles)
    out.wall_s = time.perf_counter() - started
    return out


def config_dict(config: SimConfig) -> dict:
    return asdict(config)
