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
from content.checkers._windows import Update, span

Finding = tuple[str | None, str]
SCALING_IDS = {"no_loss_scaling", "mismatched_scaling"}
OVERRIDES_SCALING = {"optimizer_step_instead_of_scaler_step", "backward_without_scaler"}
TELLING_SCALE = 2.0 ** 8
RTOL, ATOL = 1e-3, 1e-4  # norms of float32 gradients
FIX = ("Clip each window's gradients once: after scaler.unscale_(optimizer), before "
       "scaler.step(optimizer)")


def amp(trace: Trace, scn: AmpScenario, ups: list[Update]) -> list[Finding]:
    """The AMP findings of one scenario. A finding in `OVERRIDES_SCALING` among them means
    the updates' scale says nothing about the loss scaling: the caller drops the scaling
    findings."""
    findings: list[Finding] = []
    if not any(isinstance(e, ScalerCall) and e.method == "scale" for e in trace.events):
        findings.append(("backward_without_scaler",
                         "the loss never went through scaler.scale(): backpropagate "
                         "scaler.scale(loss), so that small float16 gradients would not "
                         "underflow, and step with scaler.step(optimizer)"))
    for check in (_unscaled_backward(trace, scn, ups), _direct_step(trace)):
        if check:
            findings.append(check)
    return findings + _clipping(trace, scn, ups)


def _scales(trace: Trace) -> list[tuple[object, float | None]]:
    """Each event with the scaler's scale as last seen before it (None: not yet)."""
    scale, out = None, []
    for ev in trace.events:
        if isinstance(ev, ScalerCall) and ev.scale:
            scale = ev.scale
        out.append((ev, scale))
    return out


def _unscaled_backward(trace: Trace, scn: AmpScenario, ups: list[Update]) -> Finding | None:
    """A backward() whose loss did not carry the scaler's scale, though scaler.scale() was
    called: its result was thrown away and the plain loss backpropagated. (A loss scaled by
    1 / accumulation_steps or the like is far from the scale: the test is by orders, while
    the scale is large enough to tell; overflows can make it back off to almost nothing.)"""
    for ev, scale in _scales(trace):
        if (isinstance(ev, Backward) and scale and scale >= TELLING_SCALE
                and abs(ev.scale) < math.sqrt(scale)):
            used = next((u for u in ups if ev.cid in u.coefs), None)
            then = ("" if used is None else
                    f"; the update after batch {used.step.pos} then used it multiplied by "
                    f"{used.coefs[ev.cid]:.3g} instead of 1/{scn.accumulation_steps}, as "
                    f"the scaler divided .grad by its scale all the same")
            return ("backward_without_scaler",
                    f"batch {ev.batch + 1}'s backward() (epoch {ev.epoch}) got the loss "
                    f"multiplied by {ev.scale:.3g}, not by the scaler's scale ({scale:g}): "
                    f"scaler.scale(loss) was called, but its result is not what went through "
                    f"backward(){then}. Call scaler.scale(loss).backward()")
    return None


def _direct_step(trace: Trace) -> Finding | None:
    """optimizer.step() called on its own once the scaler was in use: on .grad still
    multiplied by the loss scale, or unscaled but never checked for inf or NaN."""
    via_scaler = unscaled = False
    for ev, scale in _scales(trace):
        if isinstance(ev, ScalerCall):
            via_scaler |= ev.method == "step"
            unscaled |= ev.method == "unscale_"
        elif isinstance(ev, Backward):
            via_scaler = unscaled = False
        elif isinstance(ev, Step) and not ev.skipped and scale and ev.held:
            if via_scaler:
                via_scaler = unscaled = False
                continue
            where = f"optimizer.step() was called directly after batch {ev.pos} (epoch {ev.epoch})"
            big = ev.largest
            if math.isclose(ev.rescaled, 1.0) and big > 1.5:
                return ("optimizer_step_instead_of_scaler_step",
                        f"{where}, on gradients still multiplied by the loss scale "
                        f"({scale:g}): with this SGD optimizer the update was {scale:g}x too "
                        f"large. Step with scaler.step(optimizer), which unscales them first "
                        f"and skips the update if they overflowed, then call scaler.update()")
            how = ("scaler.unscale_(optimizer) had unscaled" if unscaled else
                   f"had been multiplied by {ev.rescaled:.3g} by hand")
            stuck = ("" if any(isinstance(e, ScalerCall) and e.method == "update"
                               for e in trace.events)
                     else "; without scaler.update() the scale never adapts either")
            return ("optimizer_step_instead_of_scaler_step",
                    f"{where}, on gradients that {how}: optimizer.step() applies gradients "
                    f"even when they hold inf or NaN (a float16 overflow), where "
                    f"scaler.step(optimizer) skips the update{stuck}. Step with "
                    f"scaler.step(optimizer), then call scaler.update()")
    return None


def partial_sums_rescaled(trace: Trace, scn: AmpScenario, ups: list[Update]) -> Finding | None:
    """Unscale_ (or scaler.step, which unscales) after every micro-batch while .grad keeps
    the window: each unscale_ divides the earlier, already unscaled gradients again."""
    again = [u for u in ups if u.again]
    scales = [e.scale for e in trace.events
              if isinstance(e, ScalerCall) and e.method in ("unscale_", "step") and e.scale]
    if not again or not scales or len(scales) < len(ups):
        return None
    a = scn.accumulation_steps
    coef = next(iter(again[0].coefs.values()), 0.0)  # its own micro-batch's, in that update
    own = (f"/ accumulation_steps: small-batch training with a step {a}x too small"
           if _close(coef, 1 / a) else f"multiplied by {coef:.3g}: small-batch training")
    return ("unscale_and_step_every_micro_batch",
            f"the scaler unscaled and stepped after every micro-batch while .grad still held "
            f"the window's earlier ones (the update after batch {again[0].step.pos} of epoch "
            f"{again[0].step.epoch} held {span([c + 1 for c in _batches(trace, again[0])])}): "
            f"each unscale_ divided all of .grad by the scale ({scales[0]:g}), also the "
            f"gradients an earlier unscale_ had already divided, so next to nothing was left "
            f"of them and every update applied only its own micro-batch's gradient {own}. "
            f"Unscale, clip, step and update once per window, after its last backward()")


def overflow_applied(trace: Trace, scn: AmpScenario, step: Step) -> Finding:
    """optimizer.step() ran on a window whose gradient overflowed (the judge's data made one
    micro-batch's gradient inf): what scaler.step() exists to skip."""
    held = [trace.contribs[c] for c in step.held]
    bad = [c.batch + 1 for c in held if c.scale and c.batch == scn.overflow_batch]
    which = f"{span(bad)}'s gradient was inf" if bad else "the gradients held inf"
    return ("optimizer_step_instead_of_scaler_step",
            f"in epoch {step.epoch}, {which} (an overflow, as float16 gradients can have), and "
            f"optimizer.step() after batch {step.pos} applied it: the weights became inf or "
            f"NaN. scaler.step(optimizer) would have skipped that update, and scaler.update() "
            f"lowered the scale. Step with scaler.step(optimizer), then call scaler.update()")


def _batches(trace: Trace, u: Update) -> list[int]:
    return [trace.contribs[c].batch for c in u.step.held]


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
            elif u.new and pending is None and threshold is None and not ev.skipped:
                threshold = _threshold([c for c in mine if c.held == mine[-1].held], scn)
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


def _threshold(clips: list[Clip], scn: AmpScenario) -> Finding | None:
    """The clips of an update's whole gradient, together, must do what one
    clip_grad_norm_(model.parameters(), max_norm) does: every one of them is checked."""
    for clip in clips:
        if clip.kind != "norm":
            return (None, "clip_grad_value_ clamps each gradient element; this exercise clips "
                          "the gradients' norm: torch.nn.utils.clip_grad_norm_("
                          "model.parameters(), max_norm)")
        if not clip.whole:
            return (None, "clip_grad_norm_ got only some of the model's parameters: clip "
                          "model.parameters(), so that the norm is the whole gradient's")
    before, after = clips[0].norms[0], clips[-1].norms[1]
    want = min(before, scn.max_norm)
    if abs(after - want) <= ATOL + RTOL * want:
        return None
    allowed = f"where max_norm = {scn.max_norm:g} allows {want:.3g}"
    if len(clips) == 1:
        return ("wrong_clip_threshold",
                f"clip_grad_norm_ left a gradient of norm {before:.3g} at {after:.3g}, "
                f"{allowed}: the clip used another threshold than max_norm (or another norm "
                f"type). Clip with the given max_norm and the default 2-norm, once")
    steps = ", then ".join(f"{c.norms[0]:.3g} to {c.norms[1]:.3g}" for c in clips)
    tight = min(clips, key=lambda c: c.norms[1])
    why = (f" A clip only ever shrinks the gradient: after the one that cut it to "
           f"{tight.norms[1]:.3g}, a later clip to max_norm found it already below max_norm "
           f"and left it there, so the last clip did not decide the norm."
           if after < want else "")
    return ("wrong_clip_threshold",
            f"clip_grad_norm_ ran {len(clips)} times on one update's gradient ({steps}), "
            f"leaving a norm of {before:.3g} at {after:.3g}, {allowed}.{why} Clip once, "
            f"with the given max_norm")


def _overlap(a: range, b: range) -> bool:
    return max(a.start, b.start) < min(a.stop, b.stop)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL)
