"""Deck claims about the tools around the loop: LR schedulers, gradient clipping,
AMP (GradScaler), BatchNorm vs LayerNorm/GroupNorm, and counting passes per epoch."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn

from tests.helpers.training import (
    DT,
    FIVE_WINDOWS,
    ONE_WINDOW,
    K,
    assert_close,
    assert_differ,
    bn_mlp,
    concat,
    grad_norms,
    make_batches,
    make_optimizer,
    mlp,
    rel_gap,
    step_lr,
    train,
    warmup,
)

# ------------------------------------------------ 11. LR scheduler placement


def test_scheduler_stepped_every_micro_batch_advances_k_times_per_optimizer_update():
    with warnings.catch_warnings():
        # The first scheduler.step() comes before the first optimizer.step(); torch warns.
        warnings.simplefilter("ignore", UserWarning)
        res = train(ONE_WINDOW, k=K, lr=1.0, scheduler=step_lr, scheduler_at="micro")
        warm = train(ONE_WINDOW, k=K, lr=1.0, scheduler=warmup, scheduler_at="micro")
    assert len(res.step_grads) == 1
    assert res.lrs[-1] == 0.5**K  # as if K updates had been made
    assert res.scheduler.last_epoch == K
    assert warm.lrs[-1] == pytest.approx((K + 1) / 10)  # warm-up K times too fast


def test_scheduler_stepped_every_micro_batch_triggers_torchs_order_warning():
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        train(ONE_WINDOW, k=K, scheduler=step_lr, scheduler_at="micro")


def test_scheduler_stepped_once_per_update_tracks_updates():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no order warning
        res = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=step_lr)
        warm = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=warmup)
    assert res.lrs[K - 1] == 0.5  # one update made, one decay
    assert res.lrs[-1] == 0.5**5
    assert res.scheduler.last_epoch == len(res.step_grads) == 5
    assert warm.lrs[-1] == pytest.approx(6 / 10)


@pytest.mark.parametrize(("n", "k"), [(10, 4), (12, 4), (7, 3), (5, 8)])
def test_scheduler_steps_per_epoch_are_ceil_len_over_k_when_the_partial_window_is_flushed(n, k):
    res = train(make_batches([2] * n), k=k, scheduler=step_lr)
    assert res.scheduler.last_epoch == len(res.step_grads) == math.ceil(n / k)


def test_scheduler_stepped_before_optimizer_step_skips_the_first_lr_and_warns():
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        wrong = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=step_lr, scheduler_at="before_step")
    right = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=step_lr)
    assert right.step_lrs == [1.0, 0.5, 0.25, 0.125, 0.0625]
    assert wrong.step_lrs == right.step_lrs[1:] + [0.03125]  # each update uses the next rate


def test_onecycle_sized_with_the_floor_of_updates_raises_when_the_partial_window_steps():
    n, k = 10, 4  # ceil(10 / 4) = 3 updates per epoch, floor = 2
    def onecycle(total):
        return lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=total)

    res = train(make_batches([2] * n), k=k, scheduler=onecycle(math.ceil(n / k)))
    assert res.scheduler.last_epoch == 3
    with pytest.raises(ValueError, match="Tried to step"):
        train(make_batches([2] * n), k=k, scheduler=onecycle(n // k))


# ------------------------------------------------ 12. clipping placement


def test_clipping_every_micro_batch_differs_from_clipping_once_per_window():
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) / 4  # active
    per_micro = train(FIVE_WINDOWS, k=K, clip=max_norm, clip_at="micro", model=mlp())
    per_window = train(FIVE_WINDOWS, k=K, clip=max_norm, model=mlp())
    assert rel_gap(per_micro, per_window) > 0.05  # measured 0.17


def test_clipping_once_per_window_equals_clipping_the_full_batch_gradient():
    full_norm = grad_norms(concat(ONE_WINDOW), 1)[0]
    max_norm = full_norm / 3  # active
    per_window = train(ONE_WINDOW, k=K, clip=max_norm, model=mlp())
    full = train(concat(ONE_WINDOW), k=1, clip=max_norm, model=mlp())
    assert_close(per_window.update, full.update)
    assert per_window.update.norm() < train(ONE_WINDOW, k=K, model=mlp()).update.norm()


def test_clipping_placement_does_not_matter_when_the_threshold_is_never_reached():
    max_norm = 1e6
    per_micro = train(FIVE_WINDOWS, k=K, clip=max_norm, clip_at="micro", model=mlp())
    per_window = train(FIVE_WINDOWS, k=K, clip=max_norm, model=mlp())
    assert_close(per_micro.w, per_window.w)


def test_clipping_after_step_leaves_the_update_unclipped():
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) / 4  # would be active
    after = train(FIVE_WINDOWS, k=K, clip=max_norm, clip_at="after_step", model=mlp())
    unclipped = train(FIVE_WINDOWS, k=K, model=mlp())
    assert torch.equal(after.w, unclipped.w)


def test_clamping_the_loss_is_not_clipping_its_gradient_is_zero_where_the_clamp_is_active():
    model = mlp()
    (x, y), = ONE_WINDOW[:1]
    loss = nn.functional.mse_loss(model(x), y)
    assert loss.item() > 0.1
    loss.clamp(max=0.1).backward()
    assert all(torch.count_nonzero(p.grad) == 0 for p in model.parameters())


# ------------------------------------------------ 13. BatchNorm


def test_batchnorm_accumulation_does_not_reproduce_the_full_batch_gradient():
    acc = train(ONE_WINDOW, k=K, lr=0.0, model=bn_mlp())
    full = train(concat(ONE_WINDOW), k=1, lr=0.0, model=bn_mlp())
    assert_differ(acc.step_grads[0], full.step_grads[0], at_least=1e-3)

    # Control: the same network with BatchNorm in eval mode (fixed statistics) matches.
    acc_model, full_model = bn_mlp(), bn_mlp()
    acc_model.eval()
    full_model.eval()
    acc = train(ONE_WINDOW, k=K, lr=0.0, model=acc_model)
    full = train(concat(ONE_WINDOW), k=1, lr=0.0, model=full_model)
    assert_close(acc.step_grads[0], full.step_grads[0])


@pytest.mark.parametrize("norm", ["layer", "group"])
def test_layernorm_and_groupnorm_accumulation_reproduces_the_full_batch_gradient(norm):
    def make():
        torch.manual_seed(0)
        layer = nn.LayerNorm(8) if norm == "layer" else nn.GroupNorm(2, 8)
        return nn.Sequential(nn.Linear(4, 8), layer, nn.Tanh(), nn.Linear(8, 2)).to(DT)

    acc = train(ONE_WINDOW, k=K, lr=0.0, model=make())
    full = train(concat(ONE_WINDOW), k=1, lr=0.0, model=make())
    assert_close(acc.step_grads[0], full.step_grads[0])


def test_batchnorm_running_stats_update_once_per_micro_batch_k_times_per_update():
    model = bn_mlp()
    bn = model[1]
    seen: list[torch.Tensor] = []
    bn.register_forward_pre_hook(lambda mod, args: seen.append(args[0].detach().clone()))
    res = train(ONE_WINDOW, k=K, model=model)
    assert len(res.step_grads) == 1
    assert bn.num_batches_tracked.item() == K
    mean, var = torch.zeros(8, dtype=DT), torch.ones(8, dtype=DT)
    for h in seen:  # running = (1 - momentum) * running + momentum * batch statistic
        mean = 0.9 * mean + 0.1 * h.mean(0)
        var = 0.9 * var + 0.1 * h.var(0, unbiased=True)
    assert_close(bn.running_mean, mean)
    assert_close(bn.running_var, var)

    full_model = bn_mlp()
    train(concat(ONE_WINDOW), k=1, model=full_model)
    assert full_model[1].num_batches_tracked.item() == 1
    assert_differ(bn.running_mean, full_model[1].running_mean, at_least=1e-3)


# ------------------------------------------------ 16. AMP (GradScaler) with accumulation
#
# torch 2.13 supports torch.amp.GradScaler("cpu") with enabled=True: it really multiplies
# the loss by its scale (65536 by default), unscale_() divides the float64 grads back, and
# step() skips the update on inf/nan. The scale is a power of two, so scaling and
# unscaling are exact and the scaler adds no rounding of its own.


def _scaler(init_scale: float = 2.0**16) -> torch.amp.GradScaler:
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    assert scaler.is_enabled() and scaler.get_scale() == init_scale
    return scaler


def test_amp_accumulation_with_unscale_then_clip_matches_the_fp32_loop_that_clips_per_window():
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) / 4  # active
    amp = train(FIVE_WINDOWS, k=K, clip=max_norm, scaler=_scaler(), model=mlp())
    fp32 = train(FIVE_WINDOWS, k=K, clip=max_norm, model=mlp())
    assert len(amp.step_grads) == 5  # no step skipped
    assert_close(amp.w, fp32.w)
    assert_close(torch.stack(amp.step_grads), torch.stack(fp32.step_grads))


def test_amp_clipping_before_unscale_clips_the_scaled_gradients_and_gives_a_different_result():
    scale = 2.0**16
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) * 4  # inactive on true gradients
    wrong = train(FIVE_WINDOWS, k=K, clip=max_norm, scaler=_scaler(scale),
                  unscale_before_clip=False, model=mlp())
    right = train(FIVE_WINDOWS, k=K, clip=max_norm, scaler=_scaler(scale), model=mlp())
    assert all(g.norm().item() < max_norm / 2 for g in right.step_grads)  # never clipped
    assert len(wrong.step_grads) == len(right.step_grads) == 5  # no step skipped
    assert_differ(wrong.w, right.w, at_least=1e-3)
    # Clipping the scaled gradient at max_norm = clipping the true gradient at
    # max_norm / scale: the threshold is effectively DIVIDED by the scale (the norm it
    # sees is multiplied by the scale), so it clips almost everything almost to zero.
    fp32_equivalent = train(FIVE_WINDOWS, k=K, clip=max_norm / scale, model=mlp())
    assert_close(wrong.w, fp32_equivalent.w, tol=1e-9)
    assert (wrong.w - wrong.w0).norm() < 1e-3 * (right.w - right.w0).norm()


def test_amp_with_cpu_bf16_autocast_the_grad_scaler_changes_nothing_when_unscaled_before_clip():
    """Autocast leaves float64 alone, so this one runs a float32 model: autocast computes the
    linear layers in bfloat16, with or without the scaler; the scaler adds nothing."""
    max_norm = min(grad_norms(FIVE_WINDOWS, K)) / 4
    batches = [(x.float(), y) for x, y in FIVE_WINDOWS]
    kw = {"k": K, "clip": max_norm, "autocast": True}
    amp = train(batches, scaler=_scaler(), model=mlp().float(), **kw)
    no_scaler = train(batches, model=mlp().float(), **kw)
    assert len(amp.step_grads) == 5
    assert torch.equal(amp.w, no_scaler.w)
    # autocast really ran in bfloat16: both differ from the same loop without autocast.
    fp32 = train(batches, k=K, clip=max_norm, model=mlp().float())
    assert rel_gap(amp, fp32) > 1e-4


def test_amp_unscale_twice_before_update_raises_runtime_error():
    model = mlp()
    optimizer = make_optimizer("sgd", model.parameters(), lr=0.1)
    scaler = _scaler()
    for x, y in ONE_WINDOW[:2]:
        scaler.scale(nn.functional.mse_loss(model(x), y) / 2).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
    scaler.unscale_(optimizer)  # allowed again after update()


# ------------------------------------------------ 17. accumulation is not faster per epoch


def _count_passes(model: nn.Module, batches, k: int) -> dict[str, int]:
    counts = {"forward": 0, "samples": 0, "backward": 0, "steps": 0}

    def on_backward(grad):
        counts["backward"] += 1

    def on_forward(mod, args, out):
        counts["forward"] += 1
        counts["samples"] += len(args[0])
        out.register_hook(on_backward)  # runs when a backward pass reaches this output

    model.register_forward_hook(on_forward)
    res = train(batches, k=k, model=model)
    counts["steps"] = len(res.step_grads)
    return counts


def test_accumulation_runs_the_same_number_of_forward_and_backward_passes_per_epoch():
    batches = make_batches([2] * 12)
    plain = _count_passes(mlp(), batches, k=1)
    accumulated = _count_passes(mlp(), batches, k=4)
    assert plain == {"forward": 12, "samples": 24, "backward": 12, "steps": 12}
    assert accumulated == {"forward": 12, "samples": 24, "backward": 12, "steps": 3}
