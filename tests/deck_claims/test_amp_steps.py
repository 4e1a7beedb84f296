"""Deck claims about where a GradScaler's calls go in an accumulation loop: unscale_ and
scaler.step on every micro-batch (the `unscale_and_step_every_micro_batch` mistake, the
`amp-steps` option), and optimizer.step() instead of scaler.step() when a gradient overflows
(`optimizer_step_instead_of_scaler_step`).

torch.amp.GradScaler("cpu") really scales on the CPU (see test_tools.py, section 16); the
models here are float64, so unscaling is exact and only the scale's own size is left over.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_

from tests.helpers.training import K, flat, flat_grad, make_batches, mlp

SCALE = 2.0**16
BATCHES = make_batches([4] * (3 * K))  # three windows of K micro-batches


def _scaler(init_scale: float = SCALE) -> torch.amp.GradScaler:
    return torch.amp.GradScaler("cpu", init_scale=init_scale)


def _step_every_micro_batch(model: nn.Module, lr: float, scaler=None) -> list[torch.Tensor]:
    """The amp-steps option: unscale_, clip, scaler.step and update after every backward,
    zero_grad once per window. Returns the gradient each optimizer.step() saw."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    seen = []
    optimizer.register_step_pre_hook(
        lambda *_: seen.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()])))
    scaler = scaler or _scaler()
    for i, (x, y) in enumerate(BATCHES):
        loss = nn.functional.mse_loss(model(x), y) / K
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        clip_grad_norm_(model.parameters(), 1e9)  # never reached: changes nothing
        scaler.step(optimizer)
        scaler.update()
        if (i + 1) % K == 0:
            optimizer.zero_grad()
    return seen


def _grad(model: nn.Module, x, y) -> torch.Tensor:
    model.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def test_unscale_every_micro_batch_leaves_only_the_current_micro_batchs_gradient_over_k():
    model, probe = mlp(), mlp()
    seen = _step_every_micro_batch(model, lr=0.1)
    assert len(seen) == len(BATCHES)  # one update per micro-batch
    weights = flat(probe)
    for i, ((x, y), grad) in enumerate(zip(BATCHES, seen, strict=True)):
        current = _grad(probe, x, y) / K
        # The earlier micro-batches' gradients are still in .grad, but each unscale_ divided
        # them by the scale again: what is left of them is about K / SCALE of the update.
        assert (grad - current).norm() < 1e-3 * current.norm(), i  # measured <= 3.3e-5
        with torch.no_grad():  # follow the same SGD step on the probe
            torch.nn.utils.vector_to_parameters(weights - 0.1 * grad, probe.parameters())
        weights = flat(probe)
    # Not the window's partial sums re-applied: the second update of a window would then
    # hold the first micro-batch's gradient too.
    partial = (_grad(mlp(), *BATCHES[0]) + _grad(mlp(), *BATCHES[1])) / K
    assert (seen[1] - partial).norm() > 0.1 * partial.norm()


def test_unscale_every_micro_batch_is_small_batch_training_with_a_k_times_smaller_step():
    amp = mlp()
    _step_every_micro_batch(amp, lr=0.1)
    small = mlp()  # step on every micro-batch's own gradient, at learning rate lr / K
    optimizer = torch.optim.SGD(small.parameters(), lr=0.1 / K)
    for x, y in BATCHES:
        optimizer.zero_grad()
        nn.functional.mse_loss(small(x), y).backward()
        optimizer.step()
    gap = (flat(amp) - flat(small)).norm() / (flat(small) - flat(mlp())).norm()
    assert gap < 1e-4  # measured ~1e-6: only the 1 / SCALE remnants differ


def _overflowing_window(step_with_scaler: bool) -> tuple[torch.Tensor, float]:
    """One window whose second micro-batch overflows (an inf target), then unscale_ and
    clip; the step through the scaler or straight on the optimizer, then update()."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = _scaler()
    batches = make_batches([4] * K)
    batches[1][1][0, 0] = math.inf
    for x, y in batches:
        scaler.scale(nn.functional.mse_loss(model(x), y) / K).backward()
    scaler.unscale_(optimizer)
    clip_grad_norm_(model.parameters(), 1.0)
    if step_with_scaler:
        scaler.step(optimizer)
    else:
        optimizer.step()
    scaler.update()  # accepted either way: unscale_ recorded the inf check
    return flat(model), scaler.get_scale()


def test_scaler_step_skips_an_overflowing_update_and_optimizer_step_writes_it_in():
    w0 = flat(mlp())
    skipped, scale = _overflowing_window(step_with_scaler=True)
    assert torch.equal(skipped, w0) and scale == SCALE / 2  # skipped, and the scale backs off
    written, scale = _overflowing_window(step_with_scaler=False)
    assert not torch.isfinite(written).all() and scale == SCALE / 2


def _one_window(how: str) -> torch.Tensor:
    """One window of K micro-batches through a GradScaler; returns the SGD update.
    how: "right" (scaled backward, scaler.step), "direct" (scaled backward, optimizer.step
    with nothing unscaled) or "thrown_away" (scaler.scale(loss) ignored, loss.backward())."""
    model = mlp()
    w0 = flat(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = _scaler()
    for x, y in BATCHES[:K]:
        loss = nn.functional.mse_loss(model(x), y) / K
        scaled = scaler.scale(loss)
        (loss if how == "thrown_away" else scaled).backward()
    if how == "direct":
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()
    return flat(model) - w0


def test_optimizer_step_on_scaled_gradients_makes_an_sgd_step_scale_times_too_large():
    right, direct = _one_window("right"), _one_window("direct")
    torch.testing.assert_close(direct, SCALE * right, rtol=1e-6, atol=0.0)  # w - w0 rounds


def test_a_thrown_away_scaled_loss_makes_the_update_scale_times_too_small():
    right, thrown = _one_window("right"), _one_window("thrown_away")
    torch.testing.assert_close(thrown * SCALE, right, rtol=1e-6, atol=0.0)  # w - w0 rounds


def test_scaler_scale_returns_a_new_tensor_and_the_plain_loss_leaves_grad_unscaled():
    """`backward_without_scaler`: scale() changes nothing in place; backpropagating the plain
    loss gives .grad the unscaled gradient, which unscale_ then divides by the scale; with
    no scale() call at all, unscale_ and step fail."""
    x, y = BATCHES[0]
    model = mlp()
    loss = nn.functional.mse_loss(model(x), y)
    scaler = _scaler()
    scaled = scaler.scale(loss)
    assert scaled is not loss and torch.equal(scaled, loss * SCALE)
    loss.backward()
    plain = flat_grad(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler.unscale_(optimizer)
    assert torch.allclose(flat_grad(model), plain / SCALE)
    fresh = _scaler()
    for call in (fresh.unscale_, fresh.step):
        with pytest.raises(AssertionError, match="_scale is None"):
            call(torch.optim.SGD(mlp().parameters(), lr=0.1))


def test_a_tighter_clip_before_the_clip_to_max_norm_decides_the_norm():
    """`wrong_clip_threshold`: the update's norm is min(norm, max_norm) after one clip to
    max_norm; clipping only shrinks, so a clip to max_norm after a tighter one leaves it."""
    model = mlp()
    x, y = BATCHES[0]
    nn.functional.mse_loss(model(x), y).backward()
    norm = float(flat_grad(model).norm())
    max_norm = norm / 2
    clip_grad_norm_(model.parameters(), max_norm / 10)
    clip_grad_norm_(model.parameters(), max_norm)
    assert float(flat_grad(model).norm()) == pytest.approx(max_norm / 10)


def test_a_tensor_hook_clips_each_micro_batchs_gradient_not_the_windows_sum():
    """`clip_in_grad_hook`: p.register_hook(fn) runs on each backward()'s own gradient
    before it is added to .grad, so a clamp there clamps every micro-batch separately."""
    bound = 1e-3
    hooked, plain = mlp(), mlp()
    for p in hooked.parameters():
        p.register_hook(lambda g: g.clamp(-bound, bound))
    per_micro_batch = []
    for x, y in BATCHES[:K]:
        (nn.functional.mse_loss(hooked(x), y) / K).backward()
        plain.zero_grad()
        (nn.functional.mse_loss(plain(x), y) / K).backward()
        per_micro_batch.append(flat_grad(plain).clamp(-bound, bound))
    window = flat_grad(hooked)
    assert torch.allclose(window, sum(per_micro_batch))  # the sum of clamped micro-batches
    assert window.abs().max() > bound  # not the window's sum clamped: that stays in bounds
