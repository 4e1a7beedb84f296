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

Checked against the paper's text (2026-12-06), read from the copy of the article kept in the
public GitHub repository neilthawani/HLAHTOI_hw01, file Pavlik_Anderson_2005.pdf (commit
e0108114eec06d4fdc132149757ffe8f0eb368e9):

- the five values: Table 1 (p. 572), "Parameters and statistics for all data sets", column
  "Experiment" (their Japanese-English experiment): "Decay intercept (a) 0.177", "Decay
  scale (c) 0.217", "Threshold (tau) -0.704", "Noise (s) 0.255", "Inteference scalar (h)
  0.025" [sic]. The table's other columns (a reduced model of the experiment; the Bahrick,
  Rumelhart, Young and Glenberg data sets) refit a and c (a 0.058-0.300, c 0.143-0.495) with
  tau and s fixed at these values (h too, where it applies);
- the decay: Equation 4 (p. 570), d_i(m_{i-1}) = c e^{m_{i-1}} + a, "For the first practice
  of any sequence, d1 = a because m0 is equal to negative infinity";
- the recall: Equation 2 (p. 568), p(m) = 1 / (1 + e^{(tau - m)/s});
- h (p. 569): "the scale factor to convert real time to psychological time (a measure of
  intervening interfering events) is 1 within an experiment and 0.025 between experiments",
  "implemented by multiplying the portion of time that occurred between sessions by the h
  parameter";
- every trial counts (p. 563): "our procedure results in one memory increment (according to
  the model) for each trial regardless of whether the participant responded correctly".

With beta = 0 this module reproduces the paper's worked example (Appendix, p. 586) within a
session: m1 = -0.86, d2 = 0.27, m2 = -0.43, d3 = 0.32. Two things differ from the paper, both
the simulation's own:

- psychological_age scales a trace's whole age by H once it crosses a study day, where the
  paper scales only the time between sessions and counts time inside sessions at full speed
  (the example's third test: age 4,844 s in the paper, 83,855 * 0.025 = 2,096 s here; m3 =
  -0.93 there, -0.75 here). A day's in-session time is at most a session's length against
  the 2,160 s the rest of the day counts: with a 4-minute session every day, the paper's
  ages would run about 10 % longer than these;
- the paper's activation has no beta (Equation 5 is m_n = ln sum t_i^-d_i, fitted to the
  conditions' means over participants, not per learner or item); beta here is the
  calibration below. Since m drives the decay, beta also scales C: at BETA (about 1.04) the
  decay's scale is in effect C * e^BETA, about 0.62, where the paper fitted 0.217 with none.

Other texts agree on the values: M. M. Walsh et al., "Mechanisms underlying the spacing effect
in learning: a comparison of three computational models", J. Exp. Psychol. Gen. 147 (2018),
footnote 2 (its in-press copy, Walsh2018JEPG-SpacingEffect.pdf in the same repository):
"Pavlik and Anderson (2005) proposed scaling time between sessions using a constant, h,
equal to 0.025"; and
open-spaced-repetition/srs-benchmark, models/act_r.py, starts its ACT-R from "a =
0.176786766570677  # decay intercept", "c = 0.216967308403809  # decay scale", "s =
0.254893976981164  # noise", "tau = -0.704205679427144  # threshold", "h = 0.025".

What the simulation sets (its own choices, reported):

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
