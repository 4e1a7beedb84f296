"""In the judge: rebuild what a learner's loop did from the child's raw events.

The events (see `_observe`) come from a process that ran learner code, so they are
untrusted input: every one is checked for shape and range, and anything malformed raises
`Malformed`. Gradients are predicted here, from the judge's own data, and compared with
the .grad values the child saw; clears of .grad, and rescaling of it by one factor, are
inferred from that comparison, and a claimed clip must be what torch's clipping does. The
weights are followed too: they may change only in optimizer.step(), by what plain SGD
makes of the .grad that step saw. So events that claim a correct loop without its
training (weights that never move, or a correct final copied in) do not add up.

A gradient the judge makes overflow (an AMP scenario's micro-batch) is followed as the
scaler treats it: while .grad holds it, .grad is compared with nothing, unscaling is what
GradScaler does, a scaler.step() is a skipped update (`Step.skipped`), and an
optimizer.step() on it ends the replay (`Trace.nonfinite`). A record cannot claim an overflow
the judge has not made.

The judge's own work is bounded too: a record longer than MAX_EVENTS is refused, the replay
stops at the first anomaly (the diagnosis tells only that one; later events are only
counted), and what .grad holds is followed by `Ledger` without a copy per event.
"""

from __future__ import annotations

import math
from dataclasses import replace

from content.checkers._bounds import (
    FOREIGN_OPTIMIZER,
    IN_BACKWARD,
    MAX_EVENTS,
    MAX_ROWS,
    MAX_ROWS_TOTAL,
)
from content.checkers._events import (  # the judge's values, imported from here too
    Backward,
    Clear,
    Clip,
    Malformed,
    Rescale,
    ScalerCall,
    SchedulerStep,
    Step,
    Trace,
    _floats,
    _index,
    _number,
    _vector,
)
from content.checkers._hooks import Change, Hooked, change, uniform_factor
from content.checkers._ledger import Ledger
from content.checkers._scenario import (
    N_WEIGHTS,
    Scenario,
    Vector,
    allclose,
    axpy,
    batch_grad,
)

ATOL = 1e-4  # float32 learner tensors against float64 predictions


MOVED = ("the model's weights changed outside optimizer.step(), or differently from what "
         "the given SGD optimizer does with the gradients (another optimizer, or weights "
         "changed by hand?)")


UNEXPLAINED = (".grad held values that the backward() calls seen so far do not explain (was "
               "the loss computed without criterion, or .grad changed by hand?)")
SCALER_METHODS = ("scale", "unscale_", "step", "update")
PARAM_SLICES = ((0, N_WEIGHTS - 1), (N_WEIGHTS - 1, N_WEIGHTS))  # weight, bias


class _Replay:
    def __init__(self, scn: Scenario, x: list, y: list, w0: Vector):
        self.scn, self.x, self.y = scn, x, y
        self.overflow = getattr(scn, "overflow_batch", None)
        self.weights = list(w0)  # where the weights must be now, if only SGD moved them
        self.trace = Trace()
        self.fetch_epoch: dict[int, int] = {}
        self.grads: list[Vector] = []  # per loss id, predicted from the judge's data
        # Per loss id of a loss over rows ("P"): each micro-batch it reaches with its rows
        # (None: all), and the weight bs / rows of the loss that makes them batch factors.
        self.pieces: dict[int, tuple[list[tuple[int, tuple[int, ...] | None]], float]] = {}
        self.last_loss: int | None = None
        self.ledger = Ledger(self.trace.contribs)  # what .grad holds, with what factors
        self.predicted: Vector = [0.0] * N_WEIGHTS
        self.rescaled = 1.0
        # The judge's data can make a gradient overflow (an AMP scenario): while .grad holds
        # it, .grad is compared with nothing, and unscaling is what the scaler does.
        self.overflowed = self.unscaled = False
        self.lrs: tuple[float, ...] = (scn.learning_rate,)  # the optimizer's, last seen
        self.handlers = {"F": (self.fetch, 1), "L": (self.loss, 2), "P": (self.rows, 3),
                         "B": (self.backward, 3),
                         "A": (self.accumulated, 0), "S": (self.step, 4),
                         "C": (self.clip, 5), "R": (self.scheduler, 1),
                         "G": (self.scaler, 2), "H": (self.hook, 3)}  # kind: (call, arity)
        self.hooks: list[Change] = []  # what hooks did to the last backward()'s gradient
        self.last_backward: list[int] = []  # its contributions' positions in trace.events
        self.base: Vector = list(self.predicted)  # .grad before the backward() in flight
        self.rows_seen = 0

    def event(self, ev) -> None:
        if not isinstance(ev, list) or not ev or not isinstance(ev[0], str):
            raise Malformed("an event is not a list")
        kind, args = ev[0], ev[1:]
        handler = self.handlers.get(kind)
        if handler is None or len(args) != handler[1]:
            raise Malformed(f"unknown event {kind!r}")
        self.trace.losses += kind in ("L", "P")
        self.trace.backwards += kind == "B"
        if self.trace.anomaly is None and self.trace.nonfinite is None:
            if kind not in ("H", "A") and self.hooks:
                self.settle_hooks()
            handler[0](*args)  # past either, nothing more is told: only counted

    @property
    def in_flight(self) -> bool:
        """A backward() reported a loss whose gradient has not reached .grad yet."""
        return len(self.trace.contribs) > self.ledger.stop

    def fetch(self, j) -> None:
        j = _index(j, self.scn.n_batches)
        if j == 0:
            self.trace.passes += 1
            self.trace.reach.append(0)
        if self.trace.reach:
            self.trace.reach[-1] = max(self.trace.reach[-1], j + 1)
        self.fetch_epoch[j] = self.trace.passes

    def loss(self, batch, weights) -> None:
        batch, w = _index(batch, self.scn.n_batches), _vector(weights)
        self.follow(w)
        self.add_loss(self.overflowing([batch]) or batch_grad(w, self.x[batch], self.y[batch]),
                      batch)

    def rows(self, rows, live, weights) -> None:
        """A loss over `rows` ([batch, row] each) whose gradient flows through `live` only."""
        n, bs = self.scn.n_batches, self.scn.batch_size
        pairs = []
        for value in (rows, live):
            if not isinstance(value, list) or not 0 < len(value) <= MAX_ROWS or not all(
                    isinstance(p, list) and len(p) == 2 for p in value):
                raise Malformed("a loss's rows")
            pairs.append([(_index(j, n), _index(r, bs)) for j, r in value])
        rows, live = pairs
        self.rows_seen += len(rows) + len(live)
        if self.rows_seen > MAX_ROWS_TOTAL:
            raise Malformed(f"more than {MAX_ROWS_TOTAL} rows of losses in a scenario")
        w = _vector(weights)
        self.follow(w)
        by_batch: dict[int, list[int]] = {}
        for j, r in live:
            by_batch.setdefault(j, []).append(r)
        pieces = [(j, None if sorted(rs) == list(range(bs)) else tuple(sorted(rs)))
                  for j, rs in sorted(by_batch.items())]
        self.pieces[len(self.grads)] = (pieces, bs / len(rows))
        self.add_loss(self.overflowing(by_batch) or batch_grad(
            w, [self.x[j][r] for j, r in live], [self.y[j][r] for j, r in live], len(rows)),
            max(by_batch))

    def overflowing(self, batches) -> Vector | None:
        """The gradient of a loss that reaches the scenario's overflowing batch: inf."""
        return [math.inf] * N_WEIGHTS if self.overflow in batches else None

    def add_loss(self, grad: Vector, batch: int) -> None:
        self.grads.append(grad)
        self.trace.loss_batches.append((self.fetch_epoch.get(batch, self.trace.passes), batch))
        self.last_loss = len(self.grads) - 1
        self.trace.loss_at.append(len(self.trace.events))
        if not all(map(math.isfinite, self.grads[-1])):
            self.trace.overflows.append((self.trace.loss_batches[-1],
                                                len(self.trace.events)))

    def backward(self, loss_id, scale, grads) -> None:
        loss_id, scale = _index(loss_id, len(self.grads)), _number(scale)
        grads = _vector(grads, optional=True)
        epoch, batch = self.trace.loss_batches[loss_id]
        if not self.in_flight:  # .grad still holds what earlier backward() calls left
            self.observe(epoch, grads)
            self.base = list(self.predicted)  # a hook's result is added to this
        pieces, weight = self.pieces.get(loss_id, ([(batch, None)], 1.0))
        self.last_backward = []
        for j, rows in pieces:  # one contribution per micro-batch the loss reached
            self.last_backward.append(len(self.trace.events))
            bwd = Backward(self.fetch_epoch.get(j, epoch), j, scale * weight,
                           len(self.trace.contribs), rows, loss_id in self.pieces)
            self.trace.contribs.append(bwd)
            self.trace.events.append(bwd)
        self.trace.backpropagated.add(loss_id)
        self.rescaled = 1.0
        if math.isfinite(scale):
            self.predicted = axpy(scale, self.grads[loss_id], self.predicted)
            self.overflowed |= scale != 0 and not all(map(math.isfinite, self.grads[loss_id]))

    def hook(self, param, before, after) -> None:
        """A learner's hook on a parameter got `before` and gave back `after` (`_hooks`)."""
        lo, hi = PARAM_SLICES[_index(param, len(PARAM_SLICES))]
        before, after = _floats(before, hi - lo), _floats(after, hi - lo, optional=True)
        if not self.last_backward:
            raise Malformed("a hook before any backward()")
        self.hooks.append(change(param, before, after))
        if after is not None:  # .grad gets what the hook gave back (an inf it clamped too)
            self.predicted = [self.base[i] + after[i - lo] if lo <= i < hi else p
                              for i, p in enumerate(self.predicted)]
            self.overflowed = not all(map(math.isfinite, self.predicted))

    def settle_hooks(self) -> None:
        """After a backward()'s hooks: one factor on every parameter is gradient-side
        scaling, its contributions' factor; anything else is told (`Trace.hooked`)."""
        changes, self.hooks = self.hooks, []
        if all(c.same for c in changes):
            return
        f = uniform_factor(changes)
        for at in self.last_backward:
            bwd = self.trace.events[at]
            if f is not None:
                self.trace.events[at] = self.trace.contribs[bwd.cid] = replace(
                    bwd, scale=bwd.scale * f, pooled=True)
        if f is None and self.trace.hooked is None:
            bwd = self.trace.events[self.last_backward[0]]
            self.trace.hooked = Hooked(bwd.epoch, bwd.batch, tuple(changes), bwd.scale)

    def accumulated(self) -> None:
        self.ledger.arrive(len(self.trace.contribs))

    def step(self, lrs, grads, flags, weights) -> None:
        if not isinstance(lrs, list) or not lrs or len(lrs) > 64:
            raise Malformed("learning rates")
        lrs = tuple(_number(lr) for lr in lrs)
        grads = _vector(grads, optional=True)
        flags = _index(flags, 4)
        before = _vector(weights)
        self.follow(before)
        self.lrs = lrs
        if len(set(lrs)) == 1:  # one rate for all (several differ: the lr check reports it)
            self.weights = axpy(-lrs[0], grads or [0.0] * N_WEIGHTS, before)
        if flags & IN_BACKWARD:
            self.flag("optimizer.step() ran in the middle of a backward pass")
        if flags & FOREIGN_OPTIMIZER:
            self.flag("optimizer.step() was called on an optimizer that does not hold "
                      "exactly the model's parameters")
        step = self.record_step(grads, skipped=False)
        if self.overflowed:  # optimizer.step() on an overflow: the weights are lost from here
            self.trace.nonfinite = step

    def skipped_by_hand(self) -> None:
        """An overflowed window, unscaled (so the scaler saw the inf), cleared with no step:
        the update skipped as scaler.step() skips it, at the window's last micro-batch."""
        last = self.trace.contribs[self.ledger.stop - 1]
        self.record_step(None, skipped=True, at=(last.epoch, last.batch + 1))

    def record_step(self, grads: Vector | None, skipped: bool,
                    at: tuple[int, int] | None = None) -> Step:
        """A step of the optimizer, or one scaler.step() skipped (it found inf or NaN)."""
        epoch, pos = self.trace.passes, 0
        if self.last_loss is not None:
            epoch, batch = self.trace.loss_batches[self.last_loss]
            pos = batch + 1
        if not skipped:
            self.observe(epoch, grads)
        pending = self.last_loss if self.last_loss not in self.trace.backpropagated else None
        if at is not None:
            (epoch, pos), pending = at, None
        largest = self.ledger.largest
        step = Step(epoch, pos, self.lrs, self.ledger.held, self.ledger.settle(),
                    0.0 if largest is None else largest, pending, self.rescaled, skipped,
                    math.sqrt(sum(g * g for g in grads or ())))
        self.trace.events.append(step)
        self.unscaled = False
        return step

    def clip(self, kind, mask, value, before, after) -> None:
        if kind not in ("norm", "value") or not isinstance(mask, list) or len(mask) != len(
                PARAM_SLICES) or not all(isinstance(m, bool) for m in mask):
            raise Malformed("a clipping event")
        value = None if value is None else _number(value)
        before, after = _vector(before, optional=True), _vector(after, optional=True)
        epoch = self.trace.passes
        self.observe(epoch, before)
        if before is None:
            return
        clipped = [i for (lo, hi), m in zip(PARAM_SLICES, mask, strict=True) if m
                   for i in range(lo, hi)]
        if not self.overflowed and (after is None
                                    or not _clipped(kind, value, before, after, clipped)):
            self.flag(f"gradient clipping changed .grad in a way clip_grad_{kind}_ does not")
            return
        self.predicted = after or before
        norms = tuple(math.sqrt(sum(v[i] ** 2 for i in clipped)) for v in (before, after))
        self.trace.events.append(Clip(epoch, kind, self.ledger.held, norms, all(mask)))

    def scheduler(self, which) -> None:
        self.trace.events.append(SchedulerStep(self.trace.passes, _index(which, 64)))

    def scaler(self, method, scale) -> None:
        if method not in SCALER_METHODS:
            raise Malformed("a GradScaler event")
        scale = None if scale is None else _number(scale)
        self.trace.events.append(ScalerCall(self.trace.passes, method, scale))
        if (self.overflowed and method in ("unscale_", "step") and not self.unscaled
                and scale is not None and 0 < scale < math.inf):  # a scale the child claims
            self.ledger.rescale(1 / scale)  # what torch's unscale_ does, inf or not
            self.rescaled /= scale
            self.unscaled = True
        if self.overflowed and method == "step":
            self.record_step(None, skipped=True)  # found inf: optimizer.step() is not called

    def follow(self, weights: Vector) -> None:
        """The weights the child saw must be where the steps so far put them."""
        if not allclose(weights, self.weights, ATOL, ATOL):
            self.flag(MOVED)
        self.weights = weights

    def flag(self, message: str) -> None:
        self.trace.anomaly = self.trace.anomaly or message

    def observe(self, epoch: int, actual: Vector | None) -> None:
        """Compare .grad with the ledger: an all-empty .grad means it was cleared, one
        multiplied by a single factor was rescaled; anything else is unexplained."""
        if actual is not None and _near(actual, self.predicted, ATOL):
            return
        if self.overflowed and actual is not None and not all(map(math.isfinite, actual)):
            self.predicted = actual  # inf or NaN as predicted: nothing more to compare
            return
        if actual is None or not any(actual):
            if self.overflowed and self.unscaled and self.ledger.fresh < self.ledger.stop:
                self.skipped_by_hand()
            self.overflowed = self.unscaled = False
            dropped = self.ledger.clear()
            if dropped:
                self.trace.events.append(Clear(epoch, dropped))
            self.predicted = [0.0] * N_WEIGHTS
            return
        factor = _factor(actual, self.predicted)
        if factor is None or not math.isfinite(factor) or not self.ledger.held:
            self.flag(UNEXPLAINED)
        else:
            self.ledger.rescale(factor)
            self.rescaled *= factor
            self.trace.events.append(Rescale(epoch, factor, self.ledger.held))
        self.predicted = actual


def _factor(actual: Vector, predicted: Vector) -> float | None:
    """c > 0 with actual == c * predicted, if there is one."""
    norm = sum(p * p for p in predicted)
    if norm == 0:
        return None
    c = sum(a * p for a, p in zip(actual, predicted, strict=True)) / norm
    if c <= 0 or not _near(actual, [c * p for p in predicted], ATOL * c):
        return None
    return c


def _near(actual: Vector, predicted: Vector, atol: float) -> bool:
    """.grad against a prediction. .grad is a float32 sum of terms that may cancel (loss-
    scaled ones are large): a component's rounding grows with the terms summed, not with
    the sum, so the relative tolerance is taken of the vector's largest component."""
    tol = atol + ATOL * max(map(abs, predicted))
    return math.isfinite(tol) and allclose(actual, predicted, tol, 0.0)


def _clipped(kind: str, value: float | None, before: Vector, after: Vector,
             clipped: list[int]) -> bool:
    """Whether `after` is what torch's clipping makes of `before` on the `clipped` elements:
    one factor of at most 1 (by norm), or each value clamped to [-value, value]."""
    if not allclose([after[i] for i in range(N_WEIGHTS) if i not in clipped],
                    [before[i] for i in range(N_WEIGHTS) if i not in clipped], ATOL, ATOL):
        return False
    was, now = [before[i] for i in clipped], [after[i] for i in clipped]
    if kind == "value":
        return value is not None and allclose(
            now, [min(max(b, -abs(value)), abs(value)) for b in was], ATOL, ATOL)
    if allclose(now, was, ATOL, ATOL) or not any(now):
        return True
    factor = _factor(now, was)
    return factor is not None and factor <= 1 + ATOL


def replay(scn: Scenario, plan: dict, observed) -> Trace:
    """The Trace of one scenario's observations; raises Malformed."""
    if not isinstance(observed, dict) or not isinstance(observed.get("events"), list):
        raise Malformed("a scenario's observations are missing")
    if len(observed["events"]) > MAX_EVENTS:
        raise Malformed(f"more than {MAX_EVENTS} events in a scenario")
    truncated = observed.get("truncated")
    if not isinstance(truncated, bool):  # it decides whether the final weights are checked
        raise Malformed("truncated is not a bool")
    replaying = _Replay(scn, plan["x"], plan["y"], plan["w0"])
    for ev in observed["events"]:
        replaying.event(ev)
    trace = replaying.trace
    trace.final = _vector(observed.get("final"))
    if not truncated and trace.nonfinite is None:
        replaying.follow(trace.final)
    trace.truncated = truncated
    return trace
