"""What one check scenario is, its data, and the gradients the judge predicts from them.

Pure Python (no torch): the judge runs in the sandbox service, which never imports torch
and never runs learner code. The jailed child gets the data from the judge's plan, so the
two sides train on exactly the same numbers; the bounds of its record are in `_bounds`
(the child never imports this module). The model is Linear(3, 1) trained with
MSELoss(mean); its weights travel as flat vectors [W0, W1, W2, b].
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass, replace
from typing import TypeVar

N_FEATURES = 3
N_WEIGHTS = N_FEATURES + 1
Vector = list[float]


@dataclass(frozen=True)
class Scenario:
    accumulation_steps: int
    batch_size: int
    num_epochs: int
    learning_rate: float
    n_batches: int
    seed: int

    @property
    def partial(self) -> int:
        """Micro-batches in the last, partial window (0 when n_batches divides evenly)."""
        return self.n_batches % self.accumulation_steps

    @property
    def window_ends(self) -> list[int]:
        """1-based batch numbers after which a correct loop steps."""
        a, n = self.accumulation_steps, self.n_batches
        return list(range(a, n + 1, a)) + ([n] if n % a else [])

    def describe(self) -> str:
        return (f"accumulation_steps = {self.accumulation_steps}, "
                f"{self.n_batches} micro-batches per epoch")

    def plan(self) -> dict:
        """The scenario and its seeded data, as sent to the jailed child."""
        x, y, w0 = make_data(self)
        return {"scenario": asdict(self), "x": x, "y": y, "w0": w0}


S = TypeVar("S", bound=Scenario)


def salted(scn: S, salt: int) -> S:
    """The scenario with data drawn for one submission. Salt 0 keeps the scenario's own
    seed (tests and deck lint); any other salt derives another seed from both, so a record
    of one run does not fit another run's data, targets and initial weights."""
    if isinstance(salt, bool) or not isinstance(salt, int):
        raise TypeError(f"salt must be an int, not {type(salt).__name__}")
    if salt == 0:
        return scn
    digest = hashlib.sha256(f"{scn.seed}:{salt}".encode()).digest()
    return replace(scn, seed=int.from_bytes(digest[:6], "big"))  # torch takes 64-bit seeds


def plans(scenarios: tuple[Scenario, ...], salt: int) -> list[dict]:
    """What the jailed child gets: each scenario with its data (never the answer)."""
    return [salted(scn, salt).plan() for scn in scenarios]


@dataclass(frozen=True)
class AmpScenario(Scenario):
    """A scenario of the AMP card: the child also gets a GradScaler that really scales
    (`scaler`, enabled, starting at init_scale and growing every growth_interval updates)
    and the clipping threshold `max_norm`."""
    max_norm: float = 1.0
    init_scale: float = 2.0 ** 16
    growth_interval: int = 2000
    # A micro-batch (0-based) whose gradient overflows while its loss stays finite, as a
    # float16 gradient multiplied by too large a loss scale does: the child makes its
    # backward inf (`_tags.Overflow`), the judge predicts that, and the scaler must skip
    # that window's update (None: none overflows).
    overflow_batch: int | None = None


def make_data(scn: Scenario) -> tuple[list, list, Vector]:
    """Seeded inputs [n][bs][3], targets [n][bs] and initial weights [W, b]."""
    rng = random.Random(scn.seed)
    x = [[[rng.gauss(0, 1) for _ in range(N_FEATURES)] for _ in range(scn.batch_size)]
         for _ in range(scn.n_batches)]
    y = [[rng.gauss(0, 1) for _ in range(scn.batch_size)] for _ in range(scn.n_batches)]
    w0 = [rng.gauss(0, 0.5) for _ in range(N_WEIGHTS)]
    return x, y, w0


def batch_grad(w: Vector, x: list, y: list, n: int | None = None) -> Vector:
    """Gradient of MSELoss(mean) of Linear(3, 1) at flat weights [W, b], in closed form; with
    `n`, of a mean over n rows of which these are the ones the gradient flows through."""
    grad = [0.0] * N_WEIGHTS
    for row, target in zip(x, y, strict=True):
        out = sum(wi * xi for wi, xi in zip(w, row, strict=False)) + w[N_FEATURES]
        d = 2.0 * (out - target) / (n or len(y))
        for k in range(N_FEATURES):
            grad[k] += d * row[k]
        grad[N_FEATURES] += d
    return grad


def axpy(a: float, x: Vector, y: Vector) -> Vector:
    """a * x + y."""
    return [a * xi + yi for xi, yi in zip(x, y, strict=True)]


def allclose(a: Vector, b: Vector, atol: float, rtol: float) -> bool:
    return all(abs(ai - bi) <= atol + rtol * abs(bi) for ai, bi in zip(a, b, strict=True))
