"""A second world for the simulated learner: ACT-R's declarative memory with the spacing
effect's decay, a model from another family than the schedulers' (issue 39.3).

Published model: P. I. Pavlik Jr. and J. R. Anderson, "Practice and forgetting effects on
vocabulary memory: an activation-based model of the spacing effect", Cognitive Science 29
(2005) 559-586. Every exposure i of a card leaves a trace; at time t the card's activation is

    m(t) = beta + ln( sum_i  age_i(t) ** -d_i ),     d_i = C * exp(m(t_i)) + A

where age_i is the trace's age in seconds and m(t_i) the activation when it was laid down
(the first trace decays at A): what is still strong when practised again decays faster,
which is the spacing effect. Recall is the logistic P = 1 / (1 + exp((TAU - m) / S)).
Time between study sessions passes slower than within one: its seconds count H times.
Parameters as the paper's fit reports them: A = 0.177, C = 0.217, TAU = -0.704, S = 0.255,
H = 0.025. Unlike FSRS every exposure counts (drills and remedies too), right or wrong (the
feedback shows the answer); a first exposure the learner already knew lays a second trace a
day earlier (they met it before).

What the paper fits per learner and item, the simulation sets (its own choices, reported):

- ``beta``: BETA, which makes one study of an unknown card recalled a day later as often as
  in the FSRS-4.5 world (R(1 day, S0 = w0) = 0.822), minus BETA_PER_DIFFICULTY for each step
  of the card's difficulty (easy -1, medium 0, hard +1);
- ``ease`` (the learner's factor times the card's, as in the FSRS world) divides a trace's
  age (at least a second): an easier card ages slower, as a larger stability does in FSRS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bot.bench.sim.memory import FSRS45_WEIGHTS, retrievability

__all__ = ["A", "BETA", "C", "H", "S", "TAU", "ActrMemory", "psychological_age"]

A, C = 0.177, 0.217  # decay intercept and scale
TAU, S = -0.704, 0.255  # recall threshold and noise
H = 0.025  # how fast time passes between sessions (seconds per second)
SECONDS_PER_DAY = 86_400
MIN_AGE_S = 1.0  # a trace is at least a second old, ease counted: each term is at most 1,
# so several exposures at one instant (one answer's explanations) cannot run away
ANCHOR = retrievability(1.0, FSRS45_WEIGHTS[0])  # the FSRS world, a day after a first miss
BETA = TAU - S * math.log(1 / ANCHOR - 1) + A * math.log(H * SECONDS_PER_DAY)
BETA_PER_DIFFICULTY = 0.1


def psychological_age(laid: float, at: float) -> float:
    """Seconds of memory time between ``laid`` and ``at`` (days, fractional): all of it
    within a study day, H of it across days (the sessions are a day apart)."""
    seconds = max(0.0, at - laid) * SECONDS_PER_DAY
    if math.floor(laid) != math.floor(at):
        seconds *= H
    return seconds


@dataclass(slots=True)
class ActrMemory:
    """One learner's memory of one card: its traces as (time laid, decay)."""

    beta: float
    ease: float = 1.0
    traces: list[tuple[float, float]] = field(default_factory=list)
    last: float = 0.0

    @classmethod
    def first(cls, recalled: bool, at: float, ease: float = 1.0,
              d_offset: float = 0.0) -> ActrMemory:
        memory = cls(BETA - BETA_PER_DIFFICULTY * d_offset, ease)
        if recalled:  # known beforehand: met a day before
            memory.exposed(True, at - 1.0)
        memory.exposed(recalled, at)
        return memory

    def activation(self, at: float) -> float:
        total = sum(max(MIN_AGE_S, psychological_age(laid, at) / self.ease) ** -d
                    for laid, d in self.traces if laid <= at)
        return self.beta + math.log(total) if total > 0 else -math.inf

    def recall_probability(self, at: float) -> float:
        m = self.activation(at)
        if m == -math.inf:
            return 0.0
        return 1 / (1 + math.exp(min(700.0, (TAU - m) / S)))

    def exposed(self, recalled: bool, at: float) -> None:
        """Any exposure lays a trace, decaying by the activation it met."""
        m = self.activation(at)
        decay = A if m == -math.inf else C * math.exp(m) + A
        self.traces.append((at, decay))
        self.last = max(self.last, at)
