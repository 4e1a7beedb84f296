"""The AMP checker's overflowing scenario: one micro-batch's gradient is inf while its loss
stays finite, as a float16 one can be; a correct loop's scaler.step() skips that update, and
what else a loop does with it is judged from the judge's own data only."""

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


def test_the_overflow_is_in_the_gradient_while_the_loss_stays_finite():
    """As float16's: only the second scenario's batch 5 overflows, in backward()."""
    probe = """\
import math
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y)
        assert math.isfinite(loss.item()), f"loss {i + 1}"
        scaler.scale(loss).backward()
        assert all(p.grad.isfinite().all() for p in model.parameters()), f"grad {i + 1}"
        optimizer.zero_grad()
"""
    observed = observe(probe, plan())
    assert len(observed["scenarios"]) == 2 and SCENARIOS[1].overflow_batch == 4
    assert (observed["error"]["type"], observed["error"]["message"]) == ("AssertionError",
                                                                         "grad 5")


# Dropping the overflowed window by hand: the gradient is checked after each backward().
SKIP_WINDOW = """\
import torch
for epoch in range(num_epochs):
    optimizer.zero_grad()
    bad_window = False
    for i, (inputs, labels) in enumerate(dataloader):
        loss = criterion(model(inputs), labels) / accumulation_steps
        scaler.scale(loss).backward()
        if not all(p.grad.isfinite().all() for p in model.parameters()):
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


def test_a_window_with_an_overflow_dropped_by_hand_passes():
    """The updates are the scaler's: the overflowing window applies nothing, the others are
    the large-batch ones. Skipping the rest of the window's backward() passes too."""
    assert check(SKIP_WINDOW)["passed"], check(SKIP_WINDOW)["feedback"]
    rest_skipped = SKIP_WINDOW.replace("        scaler.scale(loss).backward()\n",
                                       "        if not bad_window:\n"
                                       "            scaler.scale(loss).backward()\n")
    assert rest_skipped != SKIP_WINDOW and check(rest_skipped)["passed"]
    # Stepping what is left after clearing at the overflow loses the window's start.
    cleared = SKIP_WINDOW.replace("            bad_window = True  # this window is not applied",
                                  "            optimizer.zero_grad()")
    result = check(cleared)
    assert result["mistakes"] == ["zero_grad_every_batch"], result["feedback"]
    assert "the next update saw only 1 micro-batch instead of 3" in result["feedback"][0]


GUARD = "        if not torch.isfinite(loss):\n            {then}\n"


@pytest.mark.parametrize("then", ["continue", "optimizer.zero_grad()\n            continue",
                                  "raise SystemExit(1)"])
def test_a_guard_on_the_loss_sees_no_overflow_and_the_loop_is_judged(then):
    backward = "        scaler.scale(loss).backward()\n"
    guarded = REFERENCE.replace(backward, GUARD.format(then=then) + backward)
    assert check(guarded)["passed"], check(guarded)["feedback"]


def test_a_loss_guard_does_not_hide_stepping_every_micro_batch():
    """ConvNeXt's guard, sys.exit(1) on a non-finite loss, in a loop that unscales, clips and
    steps every micro-batch: its mistake is named, not a SystemExit."""
    result = check(EXIT_ON_LOSS)
    assert result["status"] == "ok" and not result["passed"]
    assert result["mistakes"] == ["unscale_and_step_every_micro_batch"], result["feedback"]


EXIT_ON_LOSS = """\
import math
import sys
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y)
        if not math.isfinite(loss.item()):
            sys.exit(1)
        scaler.scale(loss / accumulation_steps).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.zero_grad()
"""
# A guard on the clipped norm, which is inf after an overflow, stops the second scenario.
NORM_GUARD = """\
import math
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        scaler.scale(criterion(model(x), y){scale}).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            {guard}
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""


@pytest.mark.parametrize("guard, kind", [("assert math.isfinite(norm)", "AssertionError"),
                                         ("if not math.isfinite(norm): exit(1)", "SystemExit")])
def test_a_guard_that_stops_at_the_overflow_is_told_with_the_other_scenarios_findings(guard,
                                                                                      kind):
    result = check(NORM_GUARD.format(scale="", guard=guard))
    assert result["status"] == "error" and not result["passed"]
    assert result["error"]["type"] == kind and result["error"]["line"] == 9
    stop, needless, other = result["feedback"]
    assert stop.startswith("line 9: in the scenario where batch 5's gradient overflows")
    assert "the code stopped itself" in stop and f"`{kind}" in stop
    assert "scaler.step(optimizer) skips an update" in needless
    # The first scenario, which has no overflow, ran to its end: its own mistake is named.
    assert result["mistakes"] == ["no_loss_scaling"]
    assert other.startswith("in the scenario before it") and "4x too large" in other


def test_a_stopped_loop_whose_other_scenario_was_right_is_told_so():
    result = check(NORM_GUARD.format(scale=" / accumulation_steps",
                                     guard="assert math.isfinite(norm)"))
    assert result["status"] == "error" and result["mistakes"] == []
    assert result["feedback"][-1] == ("the scenario before it, which has no overflow, ran to "
                                      "its end with correct updates")
