"""The memory models a simulated learner can live in (issue 39.3): "fsrs", FSRS-4.5's own model
(bot/bench/sim/memory.py, the default: the scheduler FSRS is judged in its own world), and
"actr", ACT-R's activation with Pavlik and Anderson's spacing-dependent decay
(bot/bench/sim/memory_actr.py), a model from another family. Both keep the same face: a first
exposure (`first`), the chance of recall at a time, and any later exposure (`exposed`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.bench.sim import memory_actr
from bot.bench.sim.memory import DECAY, FACTOR, FSRS45_WEIGHTS, Memory
from bot.bench.sim.memory_actr import ActrMemory

__all__ = ["WORLDS", "MemoryTrace", "World"]


class MemoryTrace(Protocol):
    """One learner's memory of one thing (a card, or a misconception's correction)."""

    last: float

    def recall_probability(self, at: float) -> float: ...

    def exposed(self, recalled: bool, at: float) -> None: ...


@dataclass(frozen=True)
class World:
    name: str
    first: Callable[[bool, float, float, float], MemoryTrace]  # (recalled, at, ease, d_offset)
    description: dict


FSRS = World("fsrs", Memory.first, {
    "name": "FSRS-4.5 DSR model, default weights (bot/bench/sim/memory.py)",
    "curve": f"R(t) = (1 + {FACTOR:.6f} * t / S) ** {DECAY} (power curve, R(S) = 0.9)",
    "weights": list(FSRS45_WEIGHTS),
    "same_day": "only a card's first exposure of a study day moves S and D",
    "variation": "ease = learner lognormal x card lognormal scales S0, growth and post-lapse S",
})
ACTR = World("actr", ActrMemory.first, {
    "name": "ACT-R activation with spacing-dependent decay, Pavlik & Anderson (2005), "
            "Cognitive Science 29: 559-586 (bot/bench/sim/memory_actr.py)",
    "activation": "m = beta + ln(sum_i age_i ** -d_i), d_i = c * exp(m(t_i)) + a",
    "recall": "P = 1 / (1 + exp((tau - m) / s))",
    "parameters": {"a": memory_actr.A, "c": memory_actr.C, "tau": memory_actr.TAU,
                   "s": memory_actr.S, "h": memory_actr.H},
    "between_sessions": "time across study days counts h seconds per second",
    "beta": f"{memory_actr.BETA:.4f}: one study of an unknown card recalled a day later as in "
            f"the FSRS world ({memory_actr.ANCHOR:.3f}); -{memory_actr.BETA_PER_DIFFICULTY} "
            "per step of the card's difficulty",
    "same_day": "every exposure lays a trace (drills and remedies too)",
    "variation": "ease = learner lognormal x card lognormal divides a trace's age",
})
WORLDS: dict[str, World] = {world.name: world for world in (FSRS, ACTR)}
