"""In the judge: what a learner's tensor hook on a parameter (`p.register_hook(fn)`) did to
each backward()'s gradient before it was added to .grad. Pure Python.

A hook runs once per backward() and per parameter, on that backward's own gradient: with
accumulation, on each micro-batch's, never on the window's sum. One factor on every
parameter's gradient is gradient-side loss scaling (judged as the loss's factor); anything
else changes the update itself, and a hook that clamps or shrinks it clips each micro-batch
separately (`clip_in_grad_hook`).
"""

from __future__ import annotations

from dataclasses import dataclass

from content.checkers._scenario import Vector, allclose

PARAMS = ("model.weight", "model.bias")
TOL = 1e-4


@dataclass(frozen=True)
class Change:
    """What a hook did to one parameter's gradient. A one-element gradient (the bias) fits
    both a factor and a clamp: which one is told by the other parameter's."""
    param: int  # 0 weight, 1 bias
    same: bool = True
    factor: float | None = None  # after == factor * before
    bound: float | None = None  # after == before clamped to [-bound, bound]


@dataclass(frozen=True)
class Hooked:
    """The first backward() whose gradient a hook changed other than by one factor."""
    epoch: int
    batch: int  # 0-based
    changes: tuple[Change, ...]
    scale: float  # the factor the loss carried into that backward()


def change(param: int, before: Vector, after: Vector | None) -> Change:
    if after is None or allclose(after, before, TOL, TOL):
        return Change(param)
    norm = sum(b * b for b in before)
    f = sum(a * b for a, b in zip(after, before, strict=True)) / norm if norm else 0.0
    bound = max(map(abs, after))
    return Change(param, False,
                  f if f > 0 and allclose(after, [f * b for b in before], TOL * f, TOL) else None,
                  bound if allclose(after, [min(max(b, -bound), bound) for b in before], TOL,
                                    TOL) else None)


def uniform_factor(changes: list[Change]) -> float | None:
    """The one factor a hook put on every parameter's gradient, if that is what it did."""
    per_param: dict[int, float | None] = {}
    for c in changes:  # several hooks on one parameter: their factors multiply
        f = 1.0 if c.same else c.factor
        had = per_param.get(c.param, 1.0)
        per_param[c.param] = None if f is None or had is None else f * had
    factors = list(per_param.values())
    if len(per_param) != len(PARAMS) or None in factors:
        return None
    f = factors[0]
    return f if all(abs(g - f) <= TOL * f for g in factors) else None


def _clipping(changes: list[Change]) -> bool:
    """A clamp (which no factor explains), or a factor below 1 that differs from one
    parameter to the other (each one's norm clipped on its own)."""
    done = [c for c in changes if not c.same]
    if any(c.factor is None and c.bound is not None for c in done):
        return True
    factors = {round(c.factor, 6) for c in done if c.factor is not None}
    return len(done) == len(PARAMS) and len(factors) > 1 and max(factors) < 1


def finding(hooked: Hooked, accumulation_steps: int) -> tuple[str | None, str]:
    done = [c for c in hooked.changes if not c.same]
    clamps = any(c.factor is None and c.bound is not None for c in done)
    where = (f"a hook registered with register_hook changed batch {hooked.batch + 1}'s "
             f"gradient (epoch {hooked.epoch}) before it was added to .grad")
    did = "; ".join(_did(c, clamps) for c in done)
    if _clipping(list(hooked.changes)):
        return ("clip_in_grad_hook",
                f"{where}: it {did}. A tensor hook runs on each backward()'s own gradient (here "
                f"the loss multiplied by {hooked.scale:.3g}), so it clipped every micro-batch "
                f"separately and never the window's sum: the update was neither the average "
                f"gradient of the {accumulation_steps} micro-batches nor its clipped version. "
                f"Clip once per window, with torch.nn.utils.clip_grad_value_ (or "
                f"clip_grad_norm_) after the window's last backward(), right before "
                f"optimizer.step()")
    return (None, f"{where}: it {did}, not one factor on every parameter's gradient, so the "
                  f"update is not the window's average gradient")


def _did(c: Change, clamps: bool) -> str:
    name = PARAMS[c.param]
    if c.bound is not None and (clamps or c.factor is None):
        return f"clamped {name}'s gradient to [-{c.bound:.3g}, {c.bound:.3g}]"
    if c.factor is not None:
        return f"multiplied {name}'s gradient by {c.factor:.3g}"
    return f"changed {name}'s gradient by something other than a factor or a clamp"
