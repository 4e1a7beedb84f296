"""Behavioural checker for the code card `gradient-accumulation/train-loop`.

The learner's code runs in the sandbox's jailed child, which only records what it did
(`_observe`); this module judges those observations in the sandbox service, a process that
never runs learner code: it makes the data, predicts every gradient, computes the correct
weights and decides the mistakes and the feedback. It needs no torch.

Decisions:
- The code is the whole training. A loop over num_epochs is expected (the card asks for it),
  but code that goes over `dataloader` once is taken as one epoch's loop and run again until
  num_epochs epochs have run, as if wrapped in `for epoch in range(num_epochs):`.
- Partial last window (len(dataloader) not a multiple of accumulation_steps): stepping on it
  (the deck's reference, loss divided by accumulation_steps; dividing it by the window's own
  size is accepted too) or clearing it before the next epoch both pass. Leaving it in .grad so
  it joins the next epoch's first update is `leftover_gradients`: a warning, `passed` stays True.
- One mistake gives one finding: scaling and timing are judged separately, and timing findings
  that are consequences of another (e.g. leftovers of a wrong window size) are not reported.
- Behaviour no listed mistake explains fails with feedback but no mistake id.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from content.checkers._scenario import Scenario, allclose, axpy, batch_grad, make_data
from content.checkers._trace import Backward, Clear, Malformed, Step, Trace, replay

# Each scenario's accumulation_steps differs from its batch_size, num_epochs and length, and
# the two scenarios differ from each other, so a wrong name or a hard-coded number shows.
SCENARIOS = (
    Scenario(accumulation_steps=4, batch_size=3, num_epochs=2, learning_rate=0.1,
             n_batches=12, seed=11),
    Scenario(accumulation_steps=3, batch_size=5, num_epochs=4, learning_rate=0.05,
             n_batches=10, seed=12),  # 10 = 3 * 3 + 1: a partial last window
)
MISTAKES = (
    "no_loss_scaling", "mismatched_scaling", "step_every_batch", "off_by_one_modulo",
    "wrong_update_frequency", "zero_grad_every_batch", "missing_zero_grad", "missing_backward",
    "step_before_backward", "lr_scaled_instead_of_loss", "leftover_gradients",
)
WARNINGS = {"leftover_gradients"}
Finding = tuple[str | None, str]  # (mistake id or None, feedback)


@functools.cache
def plan() -> list[dict]:
    """What the jailed child gets: each scenario with its data (never the answer)."""
    return [scn.plan() for scn in SCENARIOS]


def check(code: str, device: str = "cpu") -> dict:
    """Observe and judge in THIS process: for trusted code only (deck lint, tests). Learner
    code goes through the sandbox, which observes in a jailed child and judges outside it."""
    from content.checkers._observe import observe

    return judge(observe(code, plan(), device))


def judge(observations) -> dict:
    """Judge a child's observations of the scenarios in `plan()`.

    Returns {"status": "ok"|"error", "passed": bool, "mistakes": [ids...], "feedback": [str...],
             "error": None | {"type": str, "message": str, "line": int | None}}
    Raises Malformed when the observations are not what the observer writes.
    """
    if not isinstance(observations, dict) or not isinstance(observations.get("scenarios"),
                                                             list):
        raise Malformed("no scenarios were observed")
    if observations.get("error") is not None:
        return _error_result(observations["error"])
    if len(observations["scenarios"]) != len(SCENARIOS):
        raise Malformed("not every scenario was observed")
    found: dict[str, str] = {}
    unexplained: list[str] = []
    for scn, data, observed in zip(SCENARIOS, plan(), observations["scenarios"], strict=True):
        trace = replay(scn, data, observed)
        for mistake, text in diagnose(trace, scn):
            if mistake is None:  # the same story told with another scenario's numbers
                if _shape(text) not in map(_shape, unexplained):
                    unexplained.append(text)
            else:
                found.setdefault(mistake, text)
    mistakes = [m for m in MISTAKES if m in found]
    return {
        "status": "ok",
        "passed": not unexplained and set(mistakes) <= WARNINGS,
        "mistakes": mistakes,
        "feedback": [found[m] for m in mistakes] + unexplained,
        "error": None,
    }


def _shape(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "#", text)


def _error_result(error) -> dict:
    if not isinstance(error, dict):
        raise Malformed("error detail")
    kind, message, line = (str(error.get("type"))[:100], str(error.get("message"))[:2000],
                           error.get("line"))
    if not isinstance(line, int) or isinstance(line, bool):
        line = None
    where = f"line {line}: " if line else ""
    return {
        "status": "error", "passed": False, "mistakes": [],
        "feedback": [f"{where}{kind}: {message}"],
        "error": {"type": kind, "message": message, "line": line},
    }


# -- diagnosis ----------------------------------------------------------------------------------
def diagnose(trace: Trace, scn: Scenario) -> list[Finding]:
    if trace.losses == 0:
        return [(None, "no loss came from criterion(outputs, targets) on a micro-batch of "
                       "dataloader: compute each loss with the given criterion")]
    if not any(isinstance(e, Backward) for e in trace.events):
        return [("missing_backward", "backward() was never called on the loss, so .grad "
                                     "stayed empty and optimizer.step() had nothing to apply")]
    if trace.truncated:
        return [(None, "the code did far more work than this exercise needs (the checker "
                       "stopped recording it): train num_epochs epochs over dataloader once")]
    if trace.anomaly:
        return [(None, trace.anomaly)]
    findings: list[Finding] = []
    if trace.passes != scn.num_epochs:
        findings.append((None, f"the code went over dataloader "
                               f"{_count(trace.passes, 'time')} instead of num_epochs = "
                               f"{scn.num_epochs} times"))
    steps = [e for e in trace.events if isinstance(e, Step)]
    findings += _scaling(trace, scn, steps)
    findings += _timing(trace, scn, steps)
    if not findings:
        findings += _weights(trace, scn, steps)
    return findings


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5)


def _factor(scale: float) -> str:
    if scale > 0 and _close(1 / scale, round(1 / scale)):
        return f"divided by {round(1 / scale)}"
    if _close(scale, round(scale)):
        return f"multiplied by {round(scale)}"
    return f"multiplied by {scale:.3g}"


def _size(ratio: float) -> str:
    if ratio >= 1:
        return f"{ratio:.3g}x too large"
    return f"{1 / ratio:.3g}x too small" if ratio > 0 else "zero or negative"


def _scaling(trace: Trace, scn: Scenario, steps: list[Step]) -> list[Finding]:
    a, r, lr0 = scn.accumulation_steps, scn.partial, scn.learning_rate
    last_full = scn.n_batches - r
    bwds = [e for e in trace.events if isinstance(e, Backward)]
    full = [b.scale for b in bwds if b.batch < last_full]
    part = [b.scale for b in bwds if b.batch >= last_full]
    findings: list[Finding] = []
    bad_lr = next((lr for s in steps for lr in s.lrs if not _close(lr, lr0)), None)
    if bad_lr is not None:
        ratio = bad_lr / lr0
        how = (f"learning_rate / {a}" if _close(ratio, 1 / a) else
               f"learning_rate * {a}" if _close(ratio, a) else f"{ratio:.3g} x learning_rate")
        findings.append(("lr_scaled_instead_of_loss",
                         f"the optimizer ran with learning rate {bad_lr:g} ({how}) instead of "
                         f"learning_rate = {lr0:g}; keep the learning rate and divide the loss "
                         f"by accumulation_steps ({a})"))
    scale = Counter(full).most_common(1)[0][0] if full else 1 / a
    if all(_close(s, 1 / a) for s in full) and all(
            _close(s, 1 / a) or _close(s, 1 / r) for s in part):
        return findings
    if all(_close(s, 1) for s in full + part):
        if bad_lr is None:
            findings.append(("no_loss_scaling",
                             f"the loss was not divided by accumulation_steps ({a}), so every "
                             f"update used gradients {a}x too large"))
        return findings
    if not all(_close(s, scale) for s in full):
        text = (f"the loss was scaled by varying factors (from {min(full):.3g} to "
                f"{max(full):.3g}) instead of 1 / accumulation_steps = 1/{a}")
    elif _close(scale, 1 / a):
        text = (f"the loss of the last, partial window was {_factor(part[0])} instead of "
                f"divided by accumulation_steps ({a}) or by the window's size ({r})")
    else:
        text = (f"the loss was {_factor(scale)} where it should be divided by "
                f"accumulation_steps ({a}): the gradients were {_size(scale * a)}")
    return findings + [("mismatched_scaling", text)]


def _nums(batches: list[int]) -> str:
    if len(batches) > 6:
        return ", ".join(map(str, batches[:3])) + ", ..., " + str(batches[-1])
    return ", ".join(map(str, batches))


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "es" if noun.endswith("h") else "s")


def _span(batches: list[int]) -> str:
    """1-based batch numbers as text: '9', '9-10' or '1, 3'."""
    b = sorted(batches)
    if len(b) > 1 and b == list(range(b[0], b[-1] + 1)):
        return f"batches {b[0]}-{b[-1]}"
    return ("batch " if len(b) == 1 else "batches ") + _nums(b)


def _classify(positions: list[int], scn: Scenario) -> Finding | None:
    """Judge one epoch's step positions (1-based batch numbers) against the windows."""
    a, n = scn.accumulation_steps, scn.n_batches
    ends = scn.window_ends
    if positions in (ends, list(range(a, n + 1, a))):
        return None
    at = f"With {scn.describe()}: optimizer.step() ran"
    want = f"after batches {_nums(ends)}"
    if not positions:
        return ("wrong_update_frequency", f"With {scn.describe()}: optimizer.step() never "
                                          f"ran; it should run {want}")
    if positions == list(range(1, n + 1)):
        return ("step_every_batch", f"{at} after every micro-batch (batches "
                                    f"{_nums(positions)}) instead of only {want}")
    periods = [positions[0]] + ([positions[1] - positions[0]] if len(positions) > 1 else [])
    for d in periods:
        run_ = list(range(positions[0], n + 1, d)) if d > 0 else []
        if d > 1 and positions in (run_, run_ + [n]):
            if d == a:
                return ("off_by_one_modulo", f"{at} after batches {_nums(positions)} "
                                             f"instead of {_nums(ends)}")
            return ("wrong_update_frequency",
                    f"{at} every {d} micro-batches (after batches {_nums(positions)}) instead "
                    f"of every accumulation_steps = {a} ({want})")
    return ("wrong_update_frequency", f"{at} after batches {_nums(positions)} instead of {want}")


def _timing(trace: Trace, scn: Scenario, steps: list[Step]) -> list[Finding]:
    a = scn.accumulation_steps
    early = [s for s in steps if s.pending is not None and s.pending in trace.backpropagated]
    if early:
        return [("step_before_backward",
                 f"With {scn.describe()}: optimizer.step() ran after batch {early[0].pos}'s "
                 f"loss was computed but before its backward(), so each update missed that "
                 f"micro-batch, whose gradient went into the next window")]
    by_epoch: dict[int, list[int]] = {}
    for s in steps:
        by_epoch.setdefault(s.epoch, []).append(s.pos)
    window = _classify(by_epoch.get(1, []), scn)
    findings = [window] if window else []
    if not steps:  # nothing was applied: how .grad was cleared does not matter
        return findings
    contrib = trace.contribs
    applied: set[int] = set()
    reuse = drop = leak = None
    seen_after_drop = 0  # micro-batches the first update after a dropping clear applied
    empty_step = clears_in_epoch = False
    since_step = False  # a backward() ran since the last step()
    for ev in trace.events:
        if isinstance(ev, Backward):
            since_step = True
        elif isinstance(ev, Clear):
            clears_in_epoch |= any(contrib[c].epoch == ev.epoch for c in ev.dropped)
            lost = [c for c in ev.dropped if c not in applied]
            if drop is None and any(contrib[c].epoch == ev.epoch for c in lost):
                drop = lost
        elif isinstance(ev, Step):
            new = [c for c in ev.applied if c not in applied]
            empty_step |= since_step and not new
            if drop is not None and not seen_after_drop:
                seen_after_drop = len(new)
            if reuse is None and len(new) < len(ev.applied):
                reuse = (ev, [c for c in ev.applied if c in applied])
            if leak is None and any(contrib[c].epoch < ev.epoch for c in new):
                leak = [c for c in new if contrib[c].epoch < ev.epoch]
            applied.update(ev.applied)
            since_step = False
    if empty_step:
        findings.append((None, "optimizer.step() ran right after the gradients were cleared, "
                               "so it applied nothing: clear them after step(), not before"))
    elif drop is not None:
        findings.append(("zero_grad_every_batch",
                         f"the gradients were cleared in the middle of a window, throwing away "
                         f"those of {_span([contrib[c].batch + 1 for c in drop])} before any "
                         f"step used them: the next update saw only "
                         f"{_count(seen_after_drop, 'micro-batch')} instead of {a}"))
    if reuse is not None and (window is None or window[0] != "step_every_batch"
                              or not clears_in_epoch):
        ev, again = reuse
        findings.append(("missing_zero_grad",
                         f"the gradients were not cleared after optimizer.step(): the update "
                         f"after batch {ev.pos} (epoch {ev.epoch}) applied "
                         f"{_span(sorted({contrib[c].batch + 1 for c in again}))} again, "
                         f"already used by an earlier update"))
    if findings:
        return findings
    if leak is not None:
        e = contrib[leak[0]].epoch
        return [("leftover_gradients",
                 f"warning: with {scn.describe()}, the gradients of "
                 f"{_span([contrib[c].batch + 1 for c in leak])} at the end of epoch {e} never "
                 f"reached optimizer.step() and were not cleared, so they were added to the "
                 f"first update of epoch {e + 1}")]
    for epoch in range(2, trace.passes + 1):
        other = _classify(by_epoch.get(epoch, []), scn)
        if other:
            return [(other[0], f"in epoch {epoch}: {other[1]}")]
    return []


def reference_weights(scn: Scenario, step_partial: bool, partial_scale: float) -> list[float]:
    """Correct accumulation in float64, the partial window stepped (scaled) or dropped."""
    x, y, w = make_data(scn)
    a, n = scn.accumulation_steps, scn.n_batches
    for _ in range(scn.num_epochs):
        grad = [0.0] * len(w)
        for j in range(n):
            scale = partial_scale if j >= n - scn.partial else 1 / a
            grad = axpy(scale, batch_grad(w, x[j], y[j]), grad)
            if (j + 1) % a == 0 or (step_partial and j + 1 == n):
                w = axpy(-scn.learning_rate, grad, w)
                grad = [0.0] * len(w)
    return w


def _weights(trace: Trace, scn: Scenario, steps: list[Step]) -> list[Finding]:
    """Backstop: the final weights must match correct accumulation."""
    n = scn.n_batches
    partial = [b.scale for b in trace.contribs if b.batch >= n - scn.partial]
    stepped = any(s.epoch == 1 and s.pos == n for s in steps)
    expected = reference_weights(scn, stepped and scn.partial > 0,
                                 partial[0] if partial else 1 / scn.accumulation_steps)
    if allclose(trace.final, expected, 1e-4 * (1 + max(map(abs, expected))), 0.0):
        return []
    diff = max(abs(f - e) if math.isfinite(f) else math.inf
               for f, e in zip(trace.final, expected, strict=True))
    return [(None, f"With {scn.describe()}: the final weights differ from those of correct "
                   f"gradient accumulation (largest difference {diff:.3g}), and no known "
                   f"mistake explains it; look for extra updates, changed gradients or "
                   f"another optimizer")]
