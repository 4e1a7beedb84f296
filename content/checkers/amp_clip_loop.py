"""Behavioural checker for the code card `gradient-accumulation/amp-clip-loop`:
accumulation with AMP's GradScaler and gradient clipping, on the CPU.

Same two halves as `train_loop` (the observer runs the code in the jailed child; this module
judges in the sandbox service, without torch), with an `AmpScenario`: the child also gets
`scaler`, an enabled GradScaler for the device, and `max_norm`. The windows, the loss scaling
and the clearing are judged exactly as on the plain card (`train_loop.diagnose`, any correct
window plan passes); on top of that (`_amp`): the loss goes through scaler.scale(), each
update's gradients are clipped once, after they were unscaled, to max_norm (every clip of
an update is checked, not only the last), the backward() gets the scaled loss, and the step
goes through scaler.step(). The second scenario overflows as float16 does: one micro-batch's
loss is finite, but its scaled gradient is inf, every epoch. A correct loop's scaler.step()
skips that window's update (a loop may also clear the window by hand, applying nothing), and
optimizer.step() on it ends the judging with what it did to the weights. A guard on the loss
(`assert math.isfinite(loss)`) sees nothing wrong, so such a loop is judged on what it does;
a guard that stops the code at the overflow (on the gradient's norm, say) is told in words,
with what the scenario before it found (`stopped`). Clips to another threshold than
max_norm, however many, are `wrong_clip_threshold`. A loop that calls the scaler out of
order makes torch raise; that error is told in plain words, with the mistake behind it when
the calls before it show one (`_scaler_errors`).

Autocast stays off in the child (as on the plain card): the card judges the order of scaling,
unscaling, clipping and stepping, not the rounding of float16.
"""

from __future__ import annotations

import functools

from content.checkers import train_loop
from content.checkers._amp import (
    OVERRIDES_SCALING,
    SCALING_IDS,
    amp,
    overflow_applied,
    partial_sums_rescaled,
)
from content.checkers._scaler_errors import explain
from content.checkers._scaling import scaling
from content.checkers._scenario import AmpScenario, plans
from content.checkers._trace import Trace, replay
from content.checkers._verdict import Finding, error_result, scenarios, verdict
from content.checkers._windows import updates

# As on the plain card, accumulation_steps differs from every other number given, and the
# scenarios differ in it and in max_norm, so a wrong name or a hard-coded number shows. The
# second scaler grows its scale every 3 updates: the scale is not a constant to divide by.
SCENARIOS = (
    AmpScenario(accumulation_steps=4, batch_size=3, num_epochs=2, learning_rate=0.1,
                n_batches=12, seed=21, max_norm=0.5, init_scale=2.0 ** 16),
    AmpScenario(accumulation_steps=3, batch_size=5, num_epochs=4, learning_rate=0.05,
                n_batches=10, seed=22, max_norm=0.8, init_scale=2.0 ** 12,
                growth_interval=3,  # 10 = 3 * 3 + 1: a partial last window
                overflow_batch=4),  # every epoch, the window of batches 4-6 overflows
)
MISTAKES = (
    "no_loss_scaling", "mismatched_scaling", "optimizer_step_instead_of_scaler_step",
    "backward_without_scaler", "step_every_batch", "unscale_and_step_every_micro_batch",
    "off_by_one_modulo", "wrong_update_frequency", "zero_grad_every_batch",
    "missing_zero_grad", "missing_backward",
    "step_before_backward", "missing_scaler_update",
    "unscale_every_micro_batch", "clip_before_unscale", "wrong_clip_threshold",
    "clip_every_micro_batch",
    "clip_after_step",
    "lr_scaled_instead_of_loss", "scheduler_every_micro_batch", "clip_in_grad_hook",
    "leftover_gradients", "restarted_iterator",
)
WARNINGS = {"leftover_gradients"}


@functools.lru_cache(maxsize=32, typed=True)  # a submission's plan, then its judging
def plan(salt: int = 0) -> list[dict]:
    """What the jailed child gets: each scenario with its data (never the answer), drawn
    for `salt` (0: the scenarios' own seeds)."""
    return plans(SCENARIOS, salt)


def check(code: str, device: str = "cpu", salt: int = 0) -> dict:
    """Observe and judge in THIS process: for trusted code only (deck lint, tests)."""
    from content.checkers._observe import observe

    return judge(observe(code, plan(salt), device), salt)


def judge(observations, salt: int = 0) -> dict:
    """Judge a child's observations of the scenarios in `plan(salt)`; the result is shaped
    as `train_loop.judge`'s. Raises Malformed when the observations are not the observer's."""
    observed = scenarios(observations, len(SCENARIOS))
    data = plan(salt)
    if observations.get("error") is not None:
        k = max(len(observed) - 1, 0)  # the scenario the code raised in
        trace = replay(SCENARIOS[k], data[k], observed[k]) if observed else None
        error, scn = observations["error"], SCENARIOS[k]
        explained = explain(error, trace, scn)
        if explained is None and trace is not None and _stopped_at_overflow(error, trace, scn):
            return stopped(error, scn, [
                diagnose(replay(other, planned, obs), other)
                for other, planned, obs in zip(SCENARIOS[:k], data, observed[:k], strict=False)])
        return error_result(error, explained)
    return verdict((diagnose(replay(scn, planned, obs), scn)
                    for scn, planned, obs in zip(SCENARIOS, data, observed, strict=True)),
                   MISTAKES, WARNINGS)


# What a learner's own guard raises to stop training (assert, sys.exit, raise).
GUARD_ERRORS = ("AssertionError", "SystemExit", "FloatingPointError")


def _stopped_at_overflow(error: dict, trace: Trace, scn: AmpScenario) -> bool:
    """Whether the code stopped itself once the overflowing gradient had reached .grad."""
    return str(error.get("type")) in GUARD_ERRORS and any(
        c.scale and c.batch == scn.overflow_batch for c in trace.contribs)


def stopped(error: dict, scn: AmpScenario, earlier: list[list[Finding]]) -> dict:
    """The code's own guard ended the run at the overflow: told in words, with what the
    scenarios before it, which ran to their end, were found to do."""
    result = error_result(error, (None, (
        f"in the scenario where batch {scn.overflow_batch + 1}'s gradient overflows every "
        f"epoch (inf, as a float16 gradient multiplied by too large a loss scale can be, "
        f"while its loss stays finite), the code stopped itself")))
    result["feedback"].append(
        "a GradScaler loop needs no guard there: scaler.step(optimizer) skips an update whose "
        "gradients hold inf or NaN, and scaler.update() lowers the scale, so training goes on; "
        "the rest of that scenario was not judged")
    before = verdict(earlier, MISTAKES, WARNINGS)
    result["mistakes"] = before["mistakes"]
    result["feedback"] += [f"in the scenario before it, which has no overflow and ran to its "
                           f"end: {text}" for text in before["feedback"]] or [
        "the scenario before it, which has no overflow, ran to its end with correct updates"]
    return result


progressed = train_loop.progressed  # a backward() or a step (as for any train loop)


def diagnose(trace: Trace, scn: AmpScenario) -> list[Finding]:
    if trace.nonfinite is not None:  # what came after it was not judged
        return [overflow_applied(trace, scn, trace.nonfinite)]
    findings = train_loop.diagnose(trace, scn)
    if not trace.backwards or trace.truncated or trace.anomaly or trace.losses == 0:
        return findings  # nothing trained that the order of an AMP window could explain
    ups = updates(trace)
    extra = amp(trace, scn, ups)
    rescaled = (partial_sums_rescaled(trace, scn, ups)
                if any(m == "step_every_batch" for m, _ in findings) else None)
    if rescaled:  # not partial sums applied again: the earlier micro-batches divided away
        findings = [rescaled if m == "step_every_batch" else (m, t) for m, t in findings]
    if rescaled or any(m in OVERRIDES_SCALING for m, _ in extra):
        # No window (or no scale) for the loss scaling to be judged by: .grad's scale tells
        # nothing about it.
        scale = scaling(trace, scn, ups)
        findings = [f for f in findings if f not in scale and f[0] not in SCALING_IDS]
    return findings + extra
