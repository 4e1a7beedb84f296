"""Behavioural checker for the code card `gradient-accumulation/train-loop`.

The learner's code runs in the sandbox's jailed child, which only records what it did
(`_observe`); this module judges those observations in the sandbox service, a process that
never runs learner code: it makes the data, predicts every gradient, computes the correct
weights and decides the mistakes and the feedback. It needs no torch.

Decisions:
- The code is the whole training. A loop over num_epochs is expected (the card asks for it),
  but code that goes over `dataloader` once is taken as one epoch's loop and run again until
  num_epochs epochs have run, as if wrapped in `for epoch in range(num_epochs):`.
- Judged per update (`_windows`): which micro-batches reached each optimizer.step(), with
  what factor (`_scaling`), at what learning rate; when clipping and scheduler steps ran
  (`_timing`). Any correct window plan passes (per epoch or by a global counter; a partial
  window stepped, dropped, or scaled by its own size). Leaving an epoch's partial window in
  .grad so it joins the next epoch's first update is `leftover_gradients`: a warning,
  `passed` stays True.
- A learning rate that changes between updates is a schedule, the learner's choice; one
  fixed rate other than learning_rate is reported.
- A loss need not be one micro-batch's: a loss over any rows (a window's cached features
  with one micro-batch's re-run, open_clip's accum_freq; chunks of a batch) is followed row
  by row, and judged by the update it makes: each micro-batch's samples must reach their
  update once, weighted as in the large-batch mean.
- A tensor hook on a parameter is judged by what it did to each backward()'s gradient
  (`_hooks`): one factor on every parameter is gradient-side scaling; a clamp clips each
  micro-batch separately (`clip_in_grad_hook`).
- A new iterator over dataloader for each update or micro-batch (passes cut short again
  and again) is `restarted_iterator`; the passes and windows it made are not told apart.
- One mistake gives one finding: scaling and timing are judged separately, and timing findings
  that are consequences of another (e.g. leftovers of a wrong window size) are not reported.
- Behaviour no listed mistake explains fails with feedback that says what was observed, but
  no mistake id: a wrong id would teach the wrong fix.
"""

from __future__ import annotations

import functools

from content.checkers._hooks import finding
from content.checkers._scaling import learning_rate, scaling
from content.checkers._scenario import Scenario, plans
from content.checkers._timing import timing, transforms
from content.checkers._trace import Trace, replay
from content.checkers._verdict import Finding, error_result, scenarios, trained, verdict
from content.checkers._windows import count, restarted, updates

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
    "step_before_backward", "lr_scaled_instead_of_loss", "clip_every_micro_batch",
    "scheduler_every_micro_batch", "clip_in_grad_hook", "leftover_gradients",
    "restarted_iterator",
)
WARNINGS = {"leftover_gradients"}


@functools.lru_cache(maxsize=32, typed=True)  # a submission's plan, then its judging
def plan(salt: int = 0) -> list[dict]:
    """What the jailed child gets: each scenario with its data (never the answer), drawn
    for `salt` (0: the scenarios' own seeds)."""
    return plans(SCENARIOS, salt)


def check(code: str, device: str = "cpu", salt: int = 0) -> dict:
    """Observe and judge in THIS process: for trusted code only (deck lint, tests). Learner
    code goes through the sandbox, which observes in a jailed child and judges outside it."""
    from content.checkers._observe import observe

    return judge(observe(code, plan(salt), device), salt)


def judge(observations, salt: int = 0) -> dict:
    """Judge a child's observations of the scenarios in `plan(salt)`: the salt the child's
    plan was drawn with, so that only a run on that data adds up.

    Returns {"status": "ok"|"error", "passed": bool, "mistakes": [ids...], "feedback": [str...],
             "error": None | {"type": str, "message": str, "line": int | None}}
    Raises Malformed when the observations are not what the observer writes.
    """
    observed = scenarios(observations, len(SCENARIOS))
    if observations.get("error") is not None:
        return error_result(observations["error"])
    return verdict((diagnose(replay(scn, data, obs), scn)
                    for scn, data, obs in zip(SCENARIOS, plan(salt), observed, strict=True)),
                   MISTAKES, WARNINGS)


def progressed(observations) -> bool:
    """Whether the code got as far as this checker judges before it stopped: a backward()
    or an optimizer step (code that did not may be sent again free)."""
    return trained(observations)


# -- diagnosis ----------------------------------------------------------------------------------
def diagnose(trace: Trace, scn: Scenario) -> list[Finding]:
    if trace.losses == 0:
        return [(None, "no loss came from criterion(outputs, targets) on a micro-batch of "
                       "dataloader: compute each loss with the given criterion")]
    if not trace.backwards:
        return [("missing_backward", "backward() was never called on the loss, so .grad "
                                     "stayed empty and optimizer.step() had nothing to apply")]
    if trace.truncated:
        return [(None, "the code did far more work than this exercise needs (the checker "
                       "stopped recording it): train num_epochs epochs over dataloader once")]
    if trace.anomaly:
        return [(None, trace.anomaly)]
    ups = updates(trace)
    scale = scaling(trace, scn, ups)
    rate = learning_rate(scn, ups, unscaled=any(m == "no_loss_scaling" for m, _ in scale))
    if any(m == "lr_scaled_instead_of_loss" for m, _ in rate):
        scale = []  # the same unscaled loss, told as the fix that was tried
    hooked = [finding(trace.hooked, scn.accumulation_steps)] if trace.hooked else []
    restart = restarted(trace, scn)
    if restart:  # the passes and the windows it made follow from it
        return [restart] + scale + rate + transforms(trace) + hooked
    findings: list[Finding] = []
    if trace.passes != scn.num_epochs:
        findings.append((None, f"the code went over dataloader "
                               f"{count(trace.passes, 'time')} instead of num_epochs = "
                               f"{scn.num_epochs} times"))
    return findings + scale + rate + timing(trace, scn, ups) + transforms(trace) + hooked
