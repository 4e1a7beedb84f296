"""Deck claims about scaling: the loss over k for SGD and Adam (and what hides a missing
scaling), the learning rate over k instead, multiplying the loss, unequal micro-batches."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.helpers.training import (
    FIVE_WINDOWS,
    ONE_WINDOW,
    B,
    K,
    assert_close,
    assert_differ,
    concat,
    grad_norms,
    make_batches,
    mlp,
    rel_gap,
    step_lr,
    train,
    warmup,
)

# --------------------------------------------- 1. unscaled SGD: k times the correct step


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_unscaled_sgd_accumulation_update_is_k_times_the_scaled_update(momentum):
    kw = {"momentum": momentum}
    unscaled = train(ONE_WINDOW, k=K, loss_scale=1.0, opt_kwargs=kw)
    scaled = train(ONE_WINDOW, k=K, opt_kwargs=kw)
    assert_close(unscaled.update, K * scaled.update)
    assert_differ(unscaled.update, scaled.update)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_scaled_sgd_accumulation_equals_one_step_on_the_full_batch(momentum):
    kw = {"momentum": momentum}
    scaled = train(ONE_WINDOW, k=K, opt_kwargs=kw)
    full = train(concat(ONE_WINDOW), k=1, opt_kwargs=kw)
    assert_close(scaled.update, full.update)
    assert_close(scaled.step_grads[0], full.step_grads[0])


def test_summed_unscaled_gradient_is_k_times_the_full_batch_mean_gradient():
    unscaled = train(ONE_WINDOW, k=K, loss_scale=1.0, model=mlp())
    full = train(concat(ONE_WINDOW), k=1, model=mlp())
    assert_close(unscaled.step_grads[0], K * full.step_grads[0])


# ------------------------------------------------ 2. Adam hides the missing scaling ...


@pytest.mark.parametrize("opt", ["adam", "adamw"])
def test_adam_hides_the_missing_loss_scaling_but_sgd_does_not(opt):
    lr = 1e-2
    unscaled = train(FIVE_WINDOWS, k=K, opt=opt, lr=lr, loss_scale=1.0, model=mlp())
    scaled = train(FIVE_WINDOWS, k=K, opt=opt, lr=lr, model=mlp())
    assert len(scaled.step_grads) == 5
    assert_differ(scaled.w, scaled.w0, at_least=1e-2)  # it did move
    assert rel_gap(unscaled, scaled) < 1e-4  # measured 3.4e-6 (the eps term)

    sgd_unscaled = train(FIVE_WINDOWS, k=K, lr=lr, loss_scale=1.0, model=mlp())
    sgd_scaled = train(FIVE_WINDOWS, k=K, lr=lr, model=mlp())
    assert rel_gap(sgd_unscaled, sgd_scaled) > 1  # measured 2.6


def test_adams_eps_is_the_only_place_the_missing_loss_scaling_shows():
    def gap(eps: float) -> float:
        kw = {"eps": eps}
        a = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, loss_scale=1.0, opt_kwargs=kw,
                  model=mlp())
        b = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, opt_kwargs=kw, model=mlp())
        return rel_gap(a, b)

    assert gap(0.0) < 1e-12  # scale invariant but for float rounding (measured 0.0)
    assert gap(1e-8) < 1e-4  # the default eps: barely visible (measured 3.4e-6)
    assert gap(1e-1) > 0.1  # a large eps: the scaling shows (measured 0.48)


@pytest.mark.parametrize("opt", ["adam", "adamw"])
def test_adam_does_not_hide_the_missing_scaling_when_the_clip_threshold_is_active_for_one(opt):
    scaled_norms = grad_norms(FIVE_WINDOWS, K)
    unscaled_norms = grad_norms(FIVE_WINDOWS, K, loss_scale=1.0)
    # Between the two: the unscaled gradients are clipped, the scaled ones are not.
    max_norm = (max(scaled_norms) + min(unscaled_norms)) / 2
    kw = {"opt": opt, "lr": 1e-2, "clip": max_norm}
    unscaled = train(FIVE_WINDOWS, k=K, loss_scale=1.0, model=mlp(), **kw)
    scaled = train(FIVE_WINDOWS, k=K, model=mlp(), **kw)
    # step_grads are recorded after clipping: every unscaled step was clipped, no scaled one.
    assert [g.norm().item() for g in unscaled.step_grads] == pytest.approx([max_norm] * 5, rel=1e-4)
    assert all(g.norm().item() < 0.9 * max_norm for g in scaled.step_grads)
    assert rel_gap(unscaled, scaled) > 1e-2  # measured 0.032 (vs 3.4e-6 without clipping)


@pytest.mark.parametrize(("opt", "lr"), [("adam", 1e-2), ("sgd", 0.1)])
def test_missing_scaling_is_hidden_when_every_step_of_both_runs_is_clipped(opt, lr):
    """Nuance: a threshold below every gradient norm clips both runs to the same norm,
    max_norm, so the optimizer sees the same gradients (only clip_grad_norm_'s 1e-6 and
    Adam's eps differ). This hides the missing scaling even for SGD."""
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) / 10
    kw = {"opt": opt, "lr": lr, "clip": max_norm}
    unscaled = train(FIVE_WINDOWS, k=K, loss_scale=1.0, model=mlp(), **kw)
    scaled = train(FIVE_WINDOWS, k=K, model=mlp(), **kw)
    for run in (unscaled, scaled):  # recorded after clipping: all at the threshold
        assert [g.norm().item() for g in run.step_grads] == pytest.approx([max_norm] * 5, rel=1e-4)
    assert rel_gap(unscaled, scaled) < 1e-5  # measured 2e-8 (Adam), 6e-7 (SGD)


def test_adam_coupled_weight_decay_does_not_hide_the_missing_scaling_but_adamw_does():
    kw = {"weight_decay": 0.1}
    adam_unscaled = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, loss_scale=1.0,
                          opt_kwargs=kw, model=mlp())
    adam_scaled = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, opt_kwargs=kw, model=mlp())
    assert rel_gap(adam_unscaled, adam_scaled) > 0.1  # measured 0.45

    # AdamW's decay is decoupled (applied to the weights, not added to the gradient).
    adamw_unscaled = train(FIVE_WINDOWS, k=K, opt="adamw", lr=1e-2, loss_scale=1.0,
                           opt_kwargs=kw, model=mlp())
    adamw_scaled = train(FIVE_WINDOWS, k=K, opt="adamw", lr=1e-2, opt_kwargs=kw, model=mlp())
    assert rel_gap(adamw_unscaled, adamw_scaled) < 1e-4  # measured 3.4e-6


# ------------------------------------------------ 3. dividing the learning rate by k


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_lr_divided_by_k_with_unscaled_loss_matches_scaled_loss_for_sgd(momentum):
    kw = {"opt_kwargs": {"momentum": momentum}}
    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, **kw)
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, **kw)
    assert_close(lr_fix.w, scaled.w)


@pytest.mark.parametrize("opt", ["adam", "adamw"])
def test_lr_divided_by_k_makes_adam_steps_about_k_times_too_small(opt):
    # One update: Adam's first step is lr * g / (|g| + eps), so exactly 1 / k up to eps.
    lr_fix = train(ONE_WINDOW, k=K, opt=opt, lr=1e-2 / K, loss_scale=1.0)
    scaled = train(ONE_WINDOW, k=K, opt=opt, lr=1e-2)
    assert_close(lr_fix.update * K, scaled.update, tol=1e-8)
    # Several updates: the total displacement is still about k times too small.
    lr_fix = train(FIVE_WINDOWS, k=K, opt=opt, lr=1e-2 / K, loss_scale=1.0, model=mlp())
    scaled = train(FIVE_WINDOWS, k=K, opt=opt, lr=1e-2, model=mlp())
    ratio = scaled.update.norm() / lr_fix.update.norm()
    assert 0.8 * K < ratio < 1.2 * K, ratio  # measured 3.92 for K = 4


def test_lr_divided_by_k_does_not_match_scaled_loss_with_sgd_weight_decay():
    kw = {"opt_kwargs": {"weight_decay": 0.1}}
    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, **kw)
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, **kw)
    assert rel_gap(lr_fix, scaled) > 1e-2  # measured 0.054: decay is K times too weak


def test_lr_divided_by_k_does_not_match_scaled_loss_with_gradient_clipping():
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) / 2  # active in both runs
    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, clip=max_norm, model=mlp())
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, clip=max_norm, model=mlp())
    assert rel_gap(lr_fix, scaled) > 0.1  # measured 0.74: clipped steps K times too small


def test_lr_divided_by_k_still_matches_sgd_under_a_proportional_schedule():
    """Nuance for the deck's "or a schedule": StepLR, LambdaLR, cosine with eta_min=0 scale
    the base lr, so lr / k stays lr / k all along and plain/momentum SGD still matches."""
    for make in (step_lr, warmup,
                 lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5)):
        kw = {"opt_kwargs": {"momentum": 0.9}, "scheduler": make}
        lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, **kw)
        scaled = train(FIVE_WINDOWS, k=K, lr=0.1, **kw)
        assert_close(lr_fix.w, scaled.w)


def test_lr_divided_by_k_does_not_match_under_a_schedule_with_an_absolute_lr():
    """A schedule with an absolute value (here cosine's eta_min floor) is not divided by k."""
    def cosine(o):
        return torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=2, eta_min=0.05)

    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, scheduler=cosine)
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, scheduler=cosine)
    assert rel_gap(lr_fix, scaled) > 0.1  # measured 0.90


# ------------------------------------------------ 4. multiplying the loss by k


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multiplying_the_loss_by_k_makes_the_sgd_update_k_squared_times_too_large(momentum):
    kw = {"opt_kwargs": {"momentum": momentum}}
    inverted = train(ONE_WINDOW, k=K, loss_scale=float(K), **kw)
    scaled = train(ONE_WINDOW, k=K, **kw)
    assert_close(inverted.update, K * K * scaled.update)


# ------------------------------------------------ 8. dividing the loss is differentiable


def test_dividing_the_loss_by_k_gives_exactly_one_kth_of_the_gradients():
    (x, y), = ONE_WINDOW[:1]
    for k in (2, 4, 8):  # powers of two: bitwise exact
        plain, divided = mlp(), mlp()
        nn.functional.mse_loss(plain(x), y).backward()
        (nn.functional.mse_loss(divided(x), y) / k).backward()
        for p, q in zip(plain.parameters(), divided.parameters(), strict=True):
            assert torch.equal(q.grad, p.grad / k)
    plain, divided = mlp(), mlp()
    nn.functional.mse_loss(plain(x), y).backward()
    (nn.functional.mse_loss(divided(x), y) / 3).backward()
    for p, q in zip(plain.parameters(), divided.parameters(), strict=True):
        assert_close(q.grad, p.grad / 3, tol=1e-15)


# ------------------------------------------------ 14. unequal micro-batch sizes


def test_unequal_micro_batches_dividing_mean_losses_by_k_is_not_the_mean_over_samples():
    batches = make_batches([4, 4, 1])  # a short last batch
    full = train(concat(batches), k=1, lr=0.0, model=mlp())
    divided = train(batches, k=3, lr=0.0, model=mlp())
    assert_differ(divided.step_grads[0], full.step_grads[0], at_least=1e-3)


def test_unequal_micro_batches_weighting_by_sample_share_gives_the_mean_over_samples():
    batches = make_batches([4, 4, 1])
    full = train(concat(batches), k=1, lr=0.0, model=mlp())
    weighted = train(batches, k=3, lr=0.0, weight_by_samples=True, model=mlp())
    assert_close(weighted.step_grads[0], full.step_grads[0])
    # Also for a short last window of an epoch: 5 micro-batches, k = 2, last window of one.
    batches = make_batches([3, 3, 3, 3, 2], seed=5)
    weighted = train(batches, k=2, lr=0.0, weight_by_samples=True, model=mlp())
    expected = [train(concat(batches[s : s + 2]), k=1, lr=0.0, model=mlp()).step_grads[0]
                for s in (0, 2, 4)]
    for got, want in zip(weighted.step_grads, expected, strict=True):
        assert_close(got, want)


def test_dividing_mean_reduced_losses_by_the_window_sample_count_shrinks_by_the_batch_size():
    """The deck's double_normalisation: mean loss / window samples instead of / k."""
    correct = train(ONE_WINDOW, k=K, lr=0.0, model=mlp())
    twice = train(ONE_WINDOW, k=K, lr=0.0, loss_scale=1 / (K * B), model=mlp())
    assert_close(twice.step_grads[0], correct.step_grads[0] / B)
