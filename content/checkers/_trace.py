"""In the judge: rebuild what a learner's loop did from the child's raw events.

The events (see `_observe`) come from a process that ran learner code, so they are
untrusted input: every one is checked for shape and range, and anything malformed raises
`Malformed`. Gradients are predicted here, from the judge's own data, and compared with
the .grad values the child saw; clears of .grad are inferred from that comparison. The
weights are followed too: they may change only in optimizer.step(), by what plain SGD
makes of the .grad that step saw. So events that claim a correct loop without its
training (weights that never move, or a correct final copied in) do not add up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from content.checkers._scenario import (
    FOREIGN_OPTIMIZER,
    IN_BACKWARD,
    N_WEIGHTS,
    Scenario,
    Vector,
    allclose,
    axpy,
    batch_grad,
)

ATOL = 1e-4  # float32 learner tensors against float64 predictions


class Malformed(ValueError):
    """The child's observations are not what the observer writes."""


@dataclass(frozen=True)
class Backward:
    epoch: int
    batch: int  # 0-based
    scale: float
    cid: int  # contribution id


@dataclass(frozen=True)
class Step:
    epoch: int
    pos: int  # 1-based number of the batch whose loss came last (0: none yet this epoch)
    lrs: tuple[float, ...]
    applied: tuple[int, ...]  # contributions in .grad when step() ran
    pending: int | None  # a loss computed but not yet backpropagated at step() time


@dataclass(frozen=True)
class Clear:
    epoch: int  # the epoch in which the clear was noticed
    dropped: tuple[int, ...]  # contributions that were in .grad


@dataclass
class Trace:
    events: list = field(default_factory=list)
    contribs: list[Backward] = field(default_factory=list)
    backpropagated: set[int] = field(default_factory=set)  # loss ids
    losses: int = 0
    passes: int = 0
    anomaly: str | None = None
    truncated: bool = False
    final: Vector = field(default_factory=list)


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"expected a number, got {type(value).__name__}")
    return float(value)


def _index(value, size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise Malformed(f"index {value!r} out of range")
    return value


def _vector(value, optional: bool = False) -> Vector | None:
    if value is None and optional:
        return None
    if not isinstance(value, list) or len(value) != N_WEIGHTS:
        raise Malformed("expected a weight vector")
    return [_number(v) for v in value]


MOVED = ("the model's weights changed outside optimizer.step(), or differently from what "
         "the given SGD optimizer does with the gradients (another optimizer, or weights "
         "changed by hand?)")


class _Replay:
    def __init__(self, scn: Scenario, x: list, y: list, w0: Vector):
        self.scn, self.x, self.y = scn, x, y
        self.weights = list(w0)  # where the weights must be now, if only SGD moved them
        self.trace = Trace()
        self.fetch_epoch: dict[int, int] = {}
        self.loss_info: list[tuple[int, int, Vector]] = []  # (epoch, batch, gradient)
        self.last_loss: int | None = None
        self.ledger: list[int] = []
        self.predicted: Vector = [0.0] * N_WEIGHTS
        self.inflight: list[int] = []
        self.handlers = {"F": (self.fetch, 1), "L": (self.loss, 2), "B": (self.backward, 3),
                         "A": (self.accumulated, 0), "S": (self.step, 4)}  # kind: (call, arity)

    def event(self, ev) -> None:
        if not isinstance(ev, list) or not ev or not isinstance(ev[0], str):
            raise Malformed("an event is not a list")
        kind, args = ev[0], ev[1:]
        handler = self.handlers.get(kind)
        if handler is None or len(args) != handler[1]:
            raise Malformed(f"unknown event {kind!r}")
        handler[0](*args)

    def fetch(self, j) -> None:
        j = _index(j, self.scn.n_batches)
        if j == 0:
            self.trace.passes += 1
        self.fetch_epoch[j] = self.trace.passes

    def loss(self, batch, weights) -> None:
        batch, w = _index(batch, self.scn.n_batches), _vector(weights)
        self.follow(w)
        grad = batch_grad(w, self.x[batch], self.y[batch])
        self.loss_info.append((self.fetch_epoch.get(batch, self.trace.passes), batch, grad))
        self.last_loss = len(self.loss_info) - 1
        self.trace.losses += 1

    def backward(self, loss_id, scale, grads) -> None:
        loss_id, scale = _index(loss_id, len(self.loss_info)), _number(scale)
        grads = _vector(grads, optional=True)
        epoch, batch, grad = self.loss_info[loss_id]
        if not self.inflight:  # .grad still holds what earlier backward() calls left
            self.observe(epoch, grads)
        bwd = Backward(epoch, batch, scale, len(self.trace.contribs))
        self.trace.contribs.append(bwd)
        self.trace.backpropagated.add(loss_id)
        self.trace.events.append(bwd)
        self.inflight.append(bwd.cid)
        if math.isfinite(scale):
            self.predicted = axpy(scale, grad, self.predicted)

    def accumulated(self) -> None:
        self.ledger += self.inflight
        self.inflight = []

    def step(self, lrs, grads, flags, weights) -> None:
        if not isinstance(lrs, list) or not lrs or len(lrs) > 64:
            raise Malformed("learning rates")
        lrs = tuple(_number(lr) for lr in lrs)
        grads = _vector(grads, optional=True)
        flags = _index(flags, 4)
        before = _vector(weights)
        self.follow(before)
        if len(set(lrs)) == 1:  # one rate for all (several differ: the lr check reports it)
            self.weights = axpy(-lrs[0], grads or [0.0] * N_WEIGHTS, before)
        if flags & IN_BACKWARD:
            self.flag("optimizer.step() ran in the middle of a backward pass")
        if flags & FOREIGN_OPTIMIZER:
            self.flag("optimizer.step() was called on an optimizer that does not hold "
                      "exactly the model's parameters")
        if self.last_loss is None:
            epoch, pos = self.trace.passes, 0
        else:
            epoch, batch, _ = self.loss_info[self.last_loss]
            pos = batch + 1
        self.observe(epoch, grads)
        pending = self.last_loss if self.last_loss not in self.trace.backpropagated else None
        self.trace.events.append(Step(epoch, pos, lrs, tuple(self.ledger), pending))

    def follow(self, weights: Vector) -> None:
        """The weights the child saw must be where the steps so far put them."""
        if not allclose(weights, self.weights, ATOL, ATOL):
            self.flag(MOVED)
        self.weights = weights

    def flag(self, message: str) -> None:
        self.trace.anomaly = self.trace.anomaly or message

    def observe(self, epoch: int, actual: Vector | None) -> None:
        """Compare .grad with the ledger; an all-empty .grad means it was cleared."""
        if actual is not None and allclose(actual, self.predicted, ATOL, ATOL):
            return
        if actual is None or not any(actual):
            if self.ledger:
                self.trace.events.append(Clear(epoch, tuple(self.ledger)))
            self.ledger, self.predicted = [], [0.0] * N_WEIGHTS
            return
        self.flag(".grad held values that the backward() calls seen so far do not explain "
                  "(was the loss computed without criterion, or .grad changed by hand?)")
        self.predicted = actual


def replay(scn: Scenario, plan: dict, observed) -> Trace:
    """The Trace of one scenario's observations; raises Malformed."""
    if not isinstance(observed, dict) or not isinstance(observed.get("events"), list):
        raise Malformed("a scenario's observations are missing")
    replaying = _Replay(scn, plan["x"], plan["y"], plan["w0"])
    for ev in observed["events"]:
        replaying.event(ev)
    trace = replaying.trace
    trace.final = _vector(observed.get("final"))
    if not observed.get("truncated"):
        replaying.follow(trace.final)
    trace.truncated = observed.get("truncated") is True
    return trace
