"""How large each micro-batch's gradient was when it reached the optimizer, and with what
learning rate. Findings: (mistake id or None, feedback).

A micro-batch's factor is what its gradient was multiplied by in .grad at the update that
applied it: the loss scale seen by backward() times any in-place rescaling of .grad since
(gradient-side scaling, GradScaler's unscale_). Gradient clipping is not part of it, so a
loop that clips once per window is judged by the scaling it chose. Correct factors:
1 / accumulation_steps; for the partial last window of an epoch also 1 / its size; for an
update holding such a partial window, also 1 / the update's number of micro-batches (a mean
over what the update holds, as torchtune's token-normalised loop makes).
"""

from __future__ import annotations

import math
from collections import Counter

from content.checkers._scenario import Scenario
from content.checkers._trace import Backward, Rescale, Trace
from content.checkers._windows import Update

Finding = tuple[str | None, str]


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5)


def factor_text(scale: float) -> str:
    if scale > 0 and close(1 / scale, round(1 / scale)):
        return f"divided by {round(1 / scale)}"
    if close(scale, round(scale)):
        return f"multiplied by {round(scale)}"
    return f"multiplied by {scale:.3g}"


def _size(ratio: float) -> str:
    if ratio >= 1:
        return f"{ratio:.3g}x too large"
    return f"{1 / ratio:.3g}x too small" if ratio > 0 else "zero or negative"


def coverage(scn: Scenario, ups: list[Update]) -> list[Finding]:
    """A micro-batch whose loss came in pieces of rows (chunks of a batch) must reach its
    update whole: each of its samples once."""
    for u in ups:
        rows: dict[tuple[int, int], Counter[int]] = {}
        for c in u.new:
            if c.rows is not None:
                rows.setdefault((c.epoch, c.batch), Counter()).update(c.rows)
        for (epoch, batch), seen in sorted(rows.items()):
            missing = [k + 1 for k in range(scn.batch_size) if not seen[k]]
            twice = [k + 1 for k in range(scn.batch_size) if seen[k] > 1]
            if not missing and not twice:
                continue
            which = missing or twice
            noun = f"sample{'s' if len(which) > 1 else ''} {', '.join(map(str, which))}"
            did = (f"{noun} of its {scn.batch_size} never went through backward()" if missing
                   else f"{noun} went through backward() twice")
            return [(None, f"the update after batch {u.step.pos} (epoch {u.step.epoch}) got "
                           f"batch {batch + 1} (epoch {epoch}) in pieces, and {did}: every "
                           f"sample of a window must count once")]
    return []


def scaling(trace: Trace, scn: Scenario, ups: list[Update]) -> list[Finding]:
    a, n, r = scn.accumulation_steps, scn.n_batches, scn.partial
    pieces = coverage(scn, ups)
    if pieces:
        return pieces

    def in_tail(c: Backward) -> bool:
        return r > 0 and c.batch >= n - r

    # What never reached an update did not train anything; if nothing did, the loss scales.
    judged = [(c, u.coefs[c.cid], u) for u in ups for c in u.new] or [
        (c, c.scale, None) for c in trace.contribs]

    holds_tail = {id(u): any(map(in_tail, u.new)) for u in ups}  # once each: linear

    def sizes(c: Backward, u: Update | None) -> list[int]:
        """What a correct loop may divide c's loss by: its window's size."""
        return [a] + ([r] if in_tail(c) else []) + (
            [len(u.new)] if u is not None and holds_tail[id(u)] else [])

    def correct(c: Backward, coef: float, u: Update | None) -> bool:
        return any(close(coef, 1 / k) for k in sizes(c, u))

    if all(correct(*j) for j in judged) or _clipped_by_hand(judged, sizes):
        return []
    if all(correct(c, coef / u.step.rescaled if u else coef, u) for c, coef, u in judged):
        u = next(u for c, coef, u in judged if not correct(c, coef, u))
        return [(None, f"between the last backward() and the update after batch "
                       f"{u.step.pos} (epoch {u.step.epoch}), .grad was multiplied by "
                       f"{u.step.rescaled:.3g}, which no loss scaling explains (clipping by "
                       f"hand? torch.nn.utils.clip_grad_norm_ is recognised)")]
    what = ("the gradients reached optimizer.step()"
            if any(isinstance(e, Rescale) for e in trace.events)
            or any(c.pooled for c in trace.contribs) else "the loss was")
    full = [coef for c, coef, _ in judged if not in_tail(c)] or [j[1] for j in judged]
    part = [coef for c, coef, _ in judged if in_tail(c)]
    if all(close(coef, 1) for _, coef, _ in judged):
        return [("no_loss_scaling", f"the loss was not divided by accumulation_steps ({a})"
                                    f"{_undivided(ups, a)}")]
    scale = Counter(full).most_common(1)[0][0]
    if not all(close(s, scale) for s in full):
        text = (f"{what} scaled by varying factors (from {min(full):.3g} to {max(full):.3g}) "
                f"instead of 1 / accumulation_steps = 1/{a}")
    elif close(scale, 1 / a):
        text = (f"in the last, partial window {what} {factor_text(part[0])} instead of "
                f"divided by accumulation_steps ({a}) or by the window's size ({r})")
    else:
        text = (f"{what} {factor_text(scale)} where it should be divided by "
                f"accumulation_steps ({a}): the gradients were {_size(scale * a)}")
    return [("mismatched_scaling", text)]


def _undivided(ups: list[Update], a: int) -> str:
    """What undivided losses did to the updates: each one's gradient is the sum of the
    micro-batches it held, so the factor is their number, whatever the window was meant to be."""
    sizes = sorted({len(u.window) for u in ups if u.new})
    if not sizes:
        return ", so .grad summed the micro-batches' gradients instead of averaging them"
    if sizes == [a]:
        return f", so every update used gradients {a}x too large"
    if sizes == [1]:
        return (f"; each update held one micro-batch, so it used that micro-batch's gradient "
                f"undivided (1x), and an update of a whole window of {a} would sum {a} of "
                f"them: {a}x their mean")
    held = ", ".join(f"{k}x with {k}" for k in sizes)
    return (f", so each update used the sum of the gradients it held instead of their "
            f"mean: {held} micro-batches")


def _clipped_by_hand(judged, sizes) -> bool:
    """Whether the updates are a correct loop's, each clipped to one max_norm by a single
    factor of at most 1 (fairseq's clip_grad_norm_ by hand): every update whose factors are
    off by one f < 1 reached step() with the same norm, and no other update a larger one."""
    off: dict[int, tuple[Update, set[float]]] = {}
    for c, coef, u in judged:
        if u is None:
            return False
        wanted = [1 / k for k in sizes(c, u)]
        off.setdefault(id(u), (u, set()))[1].add(
            next((1.0 for w in wanted if close(coef, w)), None)
            or min((coef / w for w in wanted), key=lambda f: abs(f - 1)))
    clipped, free = [], []
    for u, factors in off.values():
        f = next(iter(factors))
        if not all(close(g, f) for g in factors) or f > 1 + 1e-5:
            return False
        (free if close(f, 1) else clipped).append(u.step.norm)
    top = max(clipped, default=0.0)
    return bool(clipped) and all(math.isclose(n, top, rel_tol=1e-3) for n in clipped) and all(
        n <= top * (1 + 1e-3) for n in free)


def learning_rate(scn: Scenario, ups: list[Update], unscaled: bool) -> list[Finding]:
    """A rate that changes from update to update is a schedule: the learner's choice. One
    fixed rate other than learning_rate is reported; as the fix for unscaled gradients it is
    `lr_scaled_instead_of_loss`."""
    a, lr0 = scn.accumulation_steps, scn.learning_rate
    rates = [lr for u in ups if u.step.held for lr in u.step.lrs]
    if not rates or not all(close(lr, rates[0]) for lr in rates) or close(rates[0], lr0):
        return []
    lr = rates[0]
    ratio = lr / lr0
    how = (f"learning_rate / {a}" if close(ratio, 1 / a) else
           f"learning_rate * {a}" if close(ratio, a) else f"{ratio:.3g} x learning_rate")
    text = (f"the optimizer ran every update with learning rate {lr:g} ({how}) instead of "
            f"learning_rate = {lr0:g}")
    if unscaled and (close(ratio, 1 / a) or close(ratio, a)):
        return [("lr_scaled_instead_of_loss", f"{text}; keep the learning rate and divide the "
                                              f"loss by accumulation_steps ({a})")]
    return [(None, text)]
