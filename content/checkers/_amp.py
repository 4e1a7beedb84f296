"""The order of an AMP window: scale, backward, unscale_, clip, scaler.step, update.

A run that ended normally is judged here for what the GradScaler and gradient clipping add to
accumulation; the windows themselves are judged as on the plain card (`_windows`, `_scaling`,
`_timing`). What a clip saw is known from the ledger (`_trace`): .grad rescaled in place by
one factor after a clip means the clip measured gradients that were still multiplied by the
loss scale. Findings: (mistake id or None, feedback).
"""

from __future__ import annotations

import math

from content.checkers._scenario import AmpScenario
from content.checkers._trace import Backward, Clear, Clip, Rescale, ScalerCall, Step, Trace
from content.checkers._windows import Update

Finding = tuple[str | None, str]
SCALING_IDS = {"no_loss_scaling", "mismatched_scaling"}
RTOL, ATOL = 1e-3, 1e-4  # norms of float32 gradients
FIX = ("Clip each window's gradients once: after scaler.unscale_(optimizer), before "
       "scaler.step(optimizer)")


def amp(trace: Trace, scn: AmpScenario, ups: list[Update]) -> list[Finding]:
    """The AMP findings of one scenario. `direct_step_id` among them means the updates'
    scale says nothing about the loss scaling: the caller drops the scaling findings."""
    findings: list[Finding] = []
    if not any(isinstance(e, ScalerCall) and e.method == "scale" for e in trace.events):
        findings.append((None, "the loss never went through scaler.scale(): backpropagate "
                               "scaler.scale(loss), so that small float16 gradients would not "
                               "underflow, and step with scaler.step(optimizer)"))
    direct = _direct_step(trace)
    if direct:
        findings.append(direct)
    return findings + _clipping(trace, scn, ups)


def _direct_step(trace: Trace) -> Finding | None:
    """optimizer.step() called on its own while .grad still held the scaled gradients."""
    via_scaler, scale = False, None
    for ev in trace.events:
        if isinstance(ev, ScalerCall):
            via_scaler |= ev.method == "step"
            scale = ev.scale if ev.method == "scale" and ev.scale else scale
        elif isinstance(ev, Backward):
            via_scaler = False
        elif isinstance(ev, Step):
            big = ev.largest
            if not via_scaler and math.isclose(ev.rescaled, 1.0) and big > 1.5:
                times = f"{scale:g}" if scale else f"about {big:.3g}"
                return ("optimizer_step_instead_of_scaler_step",
                        f"optimizer.step() was called directly after batch {ev.pos} (epoch "
                        f"{ev.epoch}), on gradients still multiplied by the loss scale "
                        f"({times}): the update was {times}x too large. Step with "
                        f"scaler.step(optimizer), which unscales them first and skips the "
                        f"update if they overflowed, then call scaler.update()")
            via_scaler = False
    return None


def _clipping(trace: Trace, scn: AmpScenario, ups: list[Update]) -> list[Finding]:
    """Each update's gradients clipped once, after unscaling, to max_norm."""
    update_of = {id(u.step): u for u in ups}
    clips: list[Clip] = []  # since the last step or clear
    pending: Clip | None = None  # a clip that a later in-place rescale (unscale_) followed
    early = missing = threshold = None
    late = False  # the unclipped update was clipped after its step
    stepped: Step | None = None  # the last step, until .grad is cleared or added to
    for ev in trace.events:
        if isinstance(ev, Clip):
            clips.append(ev)
            pending = None
            late |= stepped is not None and stepped is missing
        elif isinstance(ev, Rescale) and clips and not _close(ev.factor, 1.0):
            pending = pending or clips[-1]
            early = early or (clips[-1], ev.factor)
        elif isinstance(ev, Clear):
            clips, pending, stepped = [], None, None
        elif isinstance(ev, Backward):
            stepped = None
        elif isinstance(ev, Step):
            u = update_of[id(ev)]
            mine = [c for c in clips if _overlap(c.held, u.new_ids)]
            if u.new and not mine:
                missing = missing or ev
            elif u.new and pending is None and threshold is None:
                threshold = _threshold(mine[-1], scn)
            clips, pending, stepped = [], None, ev
    findings: list[Finding] = []
    if early is not None:
        findings.append(_early(early[0], early[1], trace, scn))
    if missing is not None:
        where = f"the update after batch {missing.pos} (epoch {missing.epoch})"
        findings.append(("clip_after_step", f"gradient clipping ran after the step: {where} "
                                             f"used unclipped gradients, and the clip changed "
                                             f"only what zero_grad() then cleared. {FIX}")
                        if late else
                        (None, f"{where} used gradients that no clip_grad_norm_ had clipped. "
                               f"{FIX}"))
    if threshold is not None:
        findings.append(threshold)
    return findings


def _early(clip: Clip, factor: float, trace: Trace, scn: AmpScenario) -> Finding:
    scale = 1 / factor
    held = [trace.contribs[c] for c in clip.held]
    where = (f"the update after batch {max(c.batch for c in held) + 1} (epoch {held[0].epoch})"
             if held else "an update")
    before, after = (n / scale for n in clip.norms)
    did = (f"it cut the real gradients' norm from {before:.3g} to {after:.3g}"
           if after < before * (1 - RTOL) else "it left them as they were")
    return ("clip_before_unscale",
            f"for {where}, clip_grad_{clip.kind}_ ran before the gradients were unscaled: "
            f"they were still multiplied by the loss scale ({scale:g}), so max_norm = "
            f"{scn.max_norm:g} acted as a limit of {scn.max_norm / scale:.3g} on the real "
            f"gradients ({did}). Call scaler.unscale_(optimizer) first, then clip")


def _threshold(clip: Clip, scn: AmpScenario) -> Finding | None:
    """A clip of unscaled gradients must be clip_grad_norm_(model.parameters(), max_norm)."""
    if clip.kind != "norm":
        return (None, "clip_grad_value_ clamps each gradient element; this exercise clips "
                      "the gradients' norm: torch.nn.utils.clip_grad_norm_(model.parameters(),"
                      " max_norm)")
    if not clip.whole:
        return (None, "clip_grad_norm_ got only some of the model's parameters: clip "
                      "model.parameters(), so that the norm is the whole gradient's")
    before, after = clip.norms
    want = min(before, scn.max_norm)
    if abs(after - want) <= ATOL + RTOL * want:
        return None
    return (None, f"clip_grad_norm_ left a gradient of norm {before:.3g} at {after:.3g}, where "
                  f"max_norm = {scn.max_norm:g} allows {want:.3g}: clip with the given "
                  f"max_norm (and the default 2-norm)")


def _overlap(a: range, b: range) -> bool:
    return max(a.start, b.start) < min(a.stop, b.stop)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL)
