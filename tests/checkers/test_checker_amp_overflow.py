"""The AMP checker's overflowing scenario: one micro-batch's gradient is inf, as a float16
one can be; a correct loop's scaler.step() skips that update, and what else a loop does
with it is judged from the judge's own data only."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from content.checkers._observe import observe  # noqa: E402
from content.checkers.amp_clip_loop import SCENARIOS, check, judge, plan  # noqa: E402
from tests.helpers.amp_loops import BUGGY, REFERENCE  # noqa: E402


def test_an_overflow_applied_by_optimizer_step_is_told_with_its_batch():
    from content.checkers._trace import replay
    from content.checkers.amp_clip_loop import diagnose

    scn = SCENARIOS[1]
    for name in ("unscale_clip_then_optimizer_step", "grad_divided_by_hand_then_optimizer_step",
                 "optimizer_step_without_update"):
        obs = observe(BUGGY[name][0], plan())["scenarios"][1]
        trace = replay(scn, plan()[1], obs)
        assert trace.nonfinite is not None and trace.anomaly is None
        ((mistake, text),) = diagnose(trace, scn)
        assert mistake == "optimizer_step_instead_of_scaler_step"
        assert f"batch {scn.overflow_batch + 1}'s gradient was inf" in text
        assert "the weights became inf or NaN" in text


def test_only_the_judges_own_data_can_overflow():
    """A record whose .grad turns inf where the judge's data has no overflow is refused as
    before: the skip a correct scaler makes is granted only where the judge made one."""
    from content.checkers._trace import replay

    obs = observe(REFERENCE, plan())["scenarios"][0]
    step = next(e for e in obs["events"] if e[0] == "S")
    step[2] = [float("inf")] * len(step[2])
    trace = replay(SCENARIOS[0], plan()[0], obs)
    assert trace.anomaly and trace.nonfinite is None


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_a_forged_scale_in_an_overflowed_window_is_judged_without_a_crash(scale):
    observed = observe(REFERENCE, plan())
    for ev in observed["scenarios"][1]["events"]:
        if ev[0] == "G":
            ev[2] = scale
    assert judge(observed)["status"] == "ok"


# A non-finite loss skipped before backward(), a common guard in real loops. The second
# scenario's inf target (batch 5, in the window of batches 4-6) makes the loss inf.
GUARD = "        if not torch.isfinite(loss):\n            {then}\n"
SKIP_WINDOW = """\
import torch
for epoch in range(num_epochs):
    optimizer.zero_grad()
    bad_window = False
    for i, (inputs, labels) in enumerate(dataloader):
        loss = criterion(model(inputs), labels) / accumulation_steps
        if torch.isfinite(loss):
            scaler.scale(loss).backward()
        else:
            bad_window = True  # this window is not applied
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            if bad_window:
                optimizer.zero_grad()
                bad_window = False
                continue
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""


def _guarded(then: str) -> str:
    backward = "        scaler.scale(loss).backward()\n"
    return REFERENCE.replace(backward, GUARD.format(then=then) + backward)


def test_a_window_with_a_non_finite_loss_dropped_by_hand_passes():
    """The updates are the scaler's: the overflowing window applies nothing, the others are
    the large-batch ones. Skipping the rest of the window's backward() passes too."""
    assert check(SKIP_WINDOW)["passed"], check(SKIP_WINDOW)["feedback"]
    rest_skipped = SKIP_WINDOW.replace("        if torch.isfinite(loss):",
                                       "        if torch.isfinite(loss) and not bad_window:")
    assert check(rest_skipped)["passed"]


def test_a_non_finite_loss_skipped_while_its_window_is_still_stepped_fails():
    result = check(_guarded("continue"))
    assert result["mistakes"] == ["nonfinite_loss_window_stepped"] and not result["passed"]
    (text,) = result["feedback"]
    assert "batch 5's loss was not finite" in text
    assert "the update after batch 6 still applied the rest of its window (batches 4, 6)" in text
    # Clearing at the inf loss, then stepping what is left: the window's start is lost.
    cleared = check(_guarded("optimizer.zero_grad()\n            continue"))
    assert cleared["mistakes"] == ["zero_grad_every_batch"]
    assert "the next update saw only 1 micro-batch instead of 3" in cleared["feedback"][0]
