"""Tensor hooks on the parameters (`p.register_hook(fn)`), judged by the update (issue 24).

A hook runs on every backward()'s own gradient before it is added to .grad. One factor on
every parameter's gradient is gradient-side loss scaling: right when it makes the window's
average. A clamp (or a norm clip per parameter) clips each micro-batch separately, never the
window's sum: `clip_in_grad_hook` when it bites; a hook that never changes a gradient
changes nothing.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from content.checkers._observe import observe  # noqa: E402
from content.checkers._trace import Malformed  # noqa: E402
from content.checkers.train_loop import check, judge, plan  # noqa: E402

LOOP = """\
{setup}
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        (criterion(model(x), y){scale}).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
"""
EVERY = "for p in model.parameters():\n    p.register_hook({fn})"


def loop(fn: str, scale: str = " / accumulation_steps", setup: str = EVERY) -> str:
    return LOOP.format(setup=setup.format(fn=fn), scale=scale)


CORRECT = {
    "divides_every_gradient": loop("lambda g: g / accumulation_steps", scale=""),
    "two_hooks_whose_factors_cancel": loop(
        "lambda g: g * 2", setup=EVERY + "\n    p.register_hook(lambda g: g / 2)"),
    "clamp_that_never_bites": loop("lambda g: g.clamp(-100.0, 100.0)"),
    "watches_only": loop("lambda g: norms.append(g.norm())",
                         setup="norms = []\n" + EVERY),
}
CLIPPING = {
    "clamp": (loop("lambda g: g.clamp(-0.05, 0.05)"),
              "clamped model.bias's gradient to [-0.05, 0.05]"),
    "norm_per_parameter": (
        loop("lambda g: g * min(1.0, 0.05 / (float(g.norm()) + 1e-12))"),
        "multiplied model.bias's gradient by 0.128; multiplied model.weight's"),
}


@pytest.mark.parametrize("name", CORRECT)
def test_a_hook_whose_updates_are_right_passes(name):
    assert check(CORRECT[name])["passed"], check(CORRECT[name])["feedback"]


@pytest.mark.parametrize("name", CLIPPING)
def test_a_clipping_hook_is_clipping_every_micro_batch(name):
    code, did = CLIPPING[name]
    result = check(code)
    assert (result["passed"], result["mistakes"]) == (False, ["clip_in_grad_hook"])
    (text,) = result["feedback"]
    assert "changed batch 1's gradient (epoch 1) before it was added to .grad" in text
    assert did in text and "(here the loss multiplied by 0.25)" in text
    assert "never the window's sum" in text


def test_a_wrong_factor_in_a_hook_is_the_scaling_mistake():
    result = check(loop("lambda g: g * 2"))
    assert result["mistakes"] == ["mismatched_scaling"]
    assert result["feedback"] == ["the gradients reached optimizer.step() divided by 2 where "
                                  "it should be divided by accumulation_steps (4): the "
                                  "gradients were 2x too large"]


def test_a_factor_on_one_parameter_only_is_told_as_such():
    result = check(loop("lambda g: g / accumulation_steps", scale="",
                        setup="model.weight.register_hook({fn})"))
    assert not result["passed"] and result["mistakes"] == ["no_loss_scaling"]
    assert ("it multiplied model.weight's gradient by 0.25, not one factor on every "
            "parameter's gradient") in result["feedback"][1]


@pytest.mark.parametrize("forged", [
    ["H", 2, [0.0], [0.0]], ["H", 0, [0.0], [0.0]], ["H", 1, [0.0], "x"], ["H", 1, [0.0]]])
def test_forged_hook_events_are_refused(forged):
    observed = observe(CLIPPING["clamp"][0], plan())
    events = observed["scenarios"][0]["events"]
    events[next(i for i, e in enumerate(events) if e[0] == "H")] = forged
    with pytest.raises(Malformed):
        judge(observed)


def test_a_hook_event_before_any_backward_is_refused():
    observed = observe(CLIPPING["clamp"][0], plan())
    events = observed["scenarios"][0]["events"]
    events.insert(0, ["H", 1, [0.0], [0.0]])
    with pytest.raises(Malformed):
        judge(observed)
