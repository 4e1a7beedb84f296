"""What GradScaler's refusals mean in an accumulation loop, in plain words.

torch's GradScaler keeps a per-optimizer stage (ready, unscaled, stepped) that only update()
resets, and raises when a loop calls its methods out of order. The child records each
scaler call as it begins (`_observe`), so the failing call is the trace's last scaler call,
and what ran before it tells which misplacement caused it.
"""

from __future__ import annotations

from content.checkers._scenario import Scenario
from content.checkers._trace import Backward, ScalerCall, Step, Trace
from content.checkers._verdict import Finding

UNSCALED_TWICE = "unscale_() has already been called on this optimizer since the last update()"
UNSCALE_AFTER_STEP = "unscale_() is being called after step()"
STEPPED_TWICE = "step() has already been called since the last update()"
NO_STEP_BEFORE_UPDATE = "No inf checks were recorded prior to update"
NO_GRADIENTS = "No inf checks were recorded for this optimizer"
NEVER_SCALED = "did not use scaler.scale(loss or outputs)"
UPDATE = ("Call scaler.update() once per window, right after scaler.step(optimizer): it ends "
          "the window for the scaler")


def explain(error: dict, trace: Trace | None, scn: Scenario) -> Finding | None:
    """The plain meaning of a GradScaler error, or None for any other error."""
    message = str(error.get("message"))
    events = trace.events if trace is not None else []
    calls = [i for i, e in enumerate(events) if isinstance(e, ScalerCall)]
    if NEVER_SCALED in message:
        return ("backward_without_scaler",
                "the scaler was asked to unscale or step gradients it never scaled: "
                "backpropagate scaler.scale(loss), not the loss itself")
    if NO_GRADIENTS in message:
        if not any(isinstance(e, Backward) for e in events):
            return ("missing_backward",
                    "scaler.step(optimizer) found no gradients at all: backward() never ran. "
                    "Call scaler.scale(loss).backward() on every micro-batch")
        return (None, "scaler.step(optimizer) found no gradients at all: were they cleared "
                      "(zero_grad) before the step? Clear them after scaler.update()")
    if not calls:
        return None
    last = calls[-1]
    since = _since(events, calls, ("update",))
    if UNSCALED_TWICE in message:
        prev = _last(events, calls[:-1], "unscale_")
        between = events[prev + 1:last] if prev is not None else []
        if any(isinstance(e, Step) for e in between):
            return ("missing_scaler_update",
                    f"scaler.unscale_(optimizer) ran in a new window while the scaler still "
                    f"counted the last one as open: scaler.update() had not run after its step. "
                    f"{UPDATE}")
        if any(isinstance(e, Backward) for e in between):
            return ("unscale_every_micro_batch",
                    "scaler.unscale_(optimizer) ran after one micro-batch's backward() and "
                    "again after the next one's, and torch refuses a second unscale_ before "
                    "scaler.update(). Unscale once per window: after its last backward(), "
                    "right before clipping")
        return (None, "scaler.unscale_(optimizer) ran twice in one window: call it once, "
                      "right before clipping (scaler.step(optimizer) then does not unscale "
                      "again)")
    if UNSCALE_AFTER_STEP in message or STEPPED_TWICE in message:
        return _after_step(events, calls, "unscale_" if "unscale_" in message else "step",
                           scn)
    if NO_STEP_BEFORE_UPDATE in message:
        if any(isinstance(e, Step) for e in since):
            return ("optimizer_step_instead_of_scaler_step",
                    "scaler.update() found no scaler.step(optimizer) before it: "
                    "optimizer.step() was called directly, on gradients still multiplied by "
                    "the loss scale. Step with scaler.step(optimizer), which unscales them "
                    "first, then call scaler.update()")
        return (None, "scaler.update() ran when no scaler.step(optimizer) had run since the "
                      "last update (every micro-batch?): call it once per window, right "
                      "after scaler.step(optimizer)")
    return None


def _after_step(events: list, calls: list[int], failing: str, scn: Scenario) -> Finding:
    """A call refused because scaler.step() ran since the last scaler.update()."""
    prev = _last(events, calls[:-1], "step")
    between = events[prev + 1:calls[-1]] if prev is not None else []
    backwards = [e for e in between if isinstance(e, Backward)]
    call = "scaler.unscale_(optimizer)" if failing == "unscale_" else "scaler.step(optimizer)"
    if not backwards:
        return (None, f"{call} ran after scaler.step(optimizer) in the same window: unscale_, "
                      f"clip, step, then update, once per window")
    steps = [e.pos for e in between if isinstance(e, Step)]
    pos = steps[0] if steps else backwards[0].batch  # the 1-based batch of that step
    if len(backwards) == 1 and pos not in scn.window_ends:
        return ("step_every_batch",
                f"scaler.step(optimizer) ran after batch {pos}, before its window ended, and "
                f"{call} again after batch {pos + 1}, with no scaler.update() between (which "
                f"torch refuses). Step, then update, once per window: after every "
                f"accumulation_steps-th micro-batch")
    return ("missing_scaler_update",
            f"a window ended with scaler.step(optimizer) but no scaler.update(), so the next "
            f"window's {call} was refused: the scaler still counted the last window as open. "
            f"{UPDATE}")


def _last(events: list, calls: list[int], method: str) -> int | None:
    found = [i for i in calls if events[i].method == method]
    return found[-1] if found else None


def _since(events: list, calls: list[int], methods: tuple[str, ...]) -> list:
    """The events after the last call of one of `methods` before the failing call."""
    start = max((i for i in calls[:-1] if events[i].method in methods), default=-1)
    return events[start + 1:calls[-1]]
