"""The simulated learner's memory of one card: FSRS-4.5's DSR model with its default weights.

Published model: J. Ye et al., FSRS-4.5 ("The Algorithm", open-spaced-repetition wiki; the
17 default weights of py-fsrs 3.x / fsrs4anki 4.5). A card's memory is a stability S (days)
and a difficulty D (1..10); the probability of recall after t days is the power curve

    R(t, S) = (1 + FACTOR * t / S) ** DECAY,   DECAY = -0.5, FACTOR = 19/81   (R(S, S) = 0.9)

(FSRS v4 used (1 + t / (9 S)) ** -1; 4.5 changed the shape, not the meaning of S.)

Updates, G the outcome as an FSRS rating (1 again: not recalled, 3 good: recalled):

- first exposure:  S = w[G-1],  D = w4 - (G - 3) * w5;
- recalled:        S' = S * (1 + e^w8 * (11 - D) * S^-w9 * (e^(w10 (1 - R)) - 1));
- not recalled:    S' = min(S, w11 * D^-w12 * ((S + 1)^w13 - 1) * e^(w14 (1 - R)));
- difficulty:      D' = w7 * D0(3) + (1 - w7) * (D - w6 (G - 3)), clamped to 1..10.

The min() makes a lapse never raise S. FSRS-4.5 ignores same-day repeats: only a card's first
exposure on a study day updates S and D (drills and later attempts do not).

Variation (the simulation's own, not FSRS's): ``ease`` = a learner factor times a card factor,
each lognormal, multiplies the first stability, the growth on recall (S' - S) and the
post-lapse stability, so learners and cards differ in a way no scheduler is told about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DECAY", "FACTOR", "FSRS45_WEIGHTS", "Memory", "retrievability"]

FSRS45_WEIGHTS = (0.4872, 1.4003, 3.7145, 13.8206, 5.1618, 1.2298, 0.8975, 0.031, 1.6474,
                  0.1367, 1.0461, 2.1072, 0.0793, 0.3246, 1.587, 0.2272, 2.8755)
DECAY = -0.5
FACTOR = 19 / 81
AGAIN, GOOD = 1, 3
MIN_STABILITY = 0.01  # days; keeps R defined


def retrievability(elapsed_days: float, stability: float) -> float:
    """FSRS-4.5's probability of recall ``elapsed_days`` after the last exposure."""
    if elapsed_days < 0:
        raise ValueError(f"elapsed_days must be >= 0, got {elapsed_days}")
    return (1 + FACTOR * elapsed_days / stability) ** DECAY


def _clamp_d(d: float) -> float:
    return min(10.0, max(1.0, d))


@dataclass(slots=True)
class Memory:
    """One learner's memory of one card. ``last`` is the last exposure, in days (fractional:
    a study day is an integer, the time within it a fraction)."""

    stability: float
    difficulty: float
    last: float
    ease: float = 1.0

    @classmethod
    def first(cls, recalled: bool, at: float, ease: float = 1.0, d_offset: float = 0.0,
              w: tuple[float, ...] = FSRS45_WEIGHTS) -> Memory:
        """Memory after a first exposure; ``recalled``: the learner knew it beforehand;
        ``d_offset`` shifts the initial difficulty (harder cards start harder)."""
        g = GOOD if recalled else AGAIN
        s = max(MIN_STABILITY, w[g - 1] * ease)
        return cls(s, _clamp_d(w[4] - (g - 3) * w[5] + d_offset), at, ease)

    def recall_probability(self, at: float) -> float:
        return retrievability(max(0.0, at - self.last), self.stability)

    def review(self, recalled: bool, at: float, w: tuple[float, ...] = FSRS45_WEIGHTS) -> None:
        """The first exposure of a study day: move S and D; ``at`` becomes the last exposure."""
        r = self.recall_probability(at)
        s, d = self.stability, self.difficulty
        if recalled:
            growth = math.exp(w[8]) * (11 - d) * s ** -w[9] * (math.exp(w[10] * (1 - r)) - 1)
            self.stability = s * (1 + growth * self.ease)
            g = GOOD
        else:
            lapse = w[11] * d ** -w[12] * ((s + 1) ** w[13] - 1) * math.exp(w[14] * (1 - r))
            self.stability = max(MIN_STABILITY, min(s, lapse * self.ease))
            g = AGAIN
        d0_good = w[4]  # D0(3)
        self.difficulty = _clamp_d(w[7] * d0_good + (1 - w[7]) * (d - w[6] * (g - 3)))
        self.last = at

    def seen(self, at: float) -> None:
        """A same-day repeat: S and D stay (FSRS-4.5), but the clock restarts."""
        self.last = max(self.last, at)

    def exposed(self, recalled: bool, at: float) -> None:
        """Any later exposure: the study day's first moves S and D (`review`), a same-day
        repeat only restarts the clock (`seen`)."""
        if math.floor(self.last) < math.floor(at):
            self.review(recalled, at)
        else:
            self.seen(at)
