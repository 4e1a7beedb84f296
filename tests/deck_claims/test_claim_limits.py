"""Where the deck's claims stop holding (the second expert review, issue 24 point 4): each
test pins the condition a card or mistake now states, on both sides of it where it can.

Cards and mistakes: `optimizer_step_instead_of_scaler_step` (Adam hides the scale; the
overflow is the harm: test_amp_steps.py), `scale-loss` / `full-loop` (mean reduction and
equal micro-batches), `wrong_update_frequency` (a float window), `schedule_sized_in_micro_batches`,
`clip_every_micro_batch` (only a partial sum over the threshold), `eval_confusion`
(torch.optim has no eval()), `not-faster` (small micro-batches launch k times the operators).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from tests.helpers.training import (
    DT,
    FIVE_WINDOWS,
    K,
    assert_close,
    concat,
    flat,
    flat_grad,
    make_batches,
    mlp,
    train,
)

SCALE = 2.0**16


# ------------------------------------------------ optimizer.step() on scaled gradients


def _update_on_scaled_window(optimizer_name: str, unscale: bool) -> torch.Tensor:
    model = mlp()
    w0 = flat(model)
    optimizer = getattr(torch.optim, optimizer_name)(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=SCALE)
    for x, y in make_batches([4] * K):
        scaler.scale(nn.functional.mse_loss(model(x), y) / K).backward()
    if unscale:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()  # .grad still carries the scale
    return flat(model) - w0


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_hides_the_loss_scale_when_optimizer_step_runs_on_scaled_gradients(name):
    right = _update_on_scaled_window(name, unscale=True)
    direct = _update_on_scaled_window(name, unscale=False)
    torch.testing.assert_close(direct, right, rtol=1e-3, atol=1e-9)  # only eps sees the scale


def test_sgd_does_not_hide_the_loss_scale():
    right = _update_on_scaled_window("SGD", unscale=True)
    direct = _update_on_scaled_window("SGD", unscale=False)
    torch.testing.assert_close(direct, SCALE * right, rtol=1e-6, atol=0.0)


# ------------------------------------------------ loss / k: when it is the window's mean


def _summed_grad(batches, reduction: str, divisor: float) -> torch.Tensor:
    model = mlp()
    for x, y in batches:
        (nn.functional.mse_loss(model(x), y, reduction=reduction) / divisor).backward()
    return flat_grad(model)


def _window_mean_grad(batches) -> torch.Tensor:
    return _summed_grad(concat(batches), "mean", 1)


def test_loss_over_k_gives_the_window_mean_gradient_with_mean_reduction_and_equal_sizes():
    batches = make_batches([3] * K)
    assert_close(_summed_grad(batches, "mean", K), _window_mean_grad(batches))


def test_loss_over_k_is_not_the_window_mean_with_unequal_sizes_or_sum_reduction():
    unequal = make_batches([3, 3, 3, 1])
    assert not torch.allclose(_summed_grad(unequal, "mean", K), _window_mean_grad(unequal))
    equal = make_batches([3] * K)
    summed = _summed_grad(equal, "sum", K)
    mean = _window_mean_grad(equal)
    outputs = equal[0][1].shape[1]  # mse 'sum' adds every element: batch size x outputs
    assert_close(summed, 3 * outputs * mean)  # micro-batch size x outputs times too large


# ------------------------------------------------ a float as the window size


@pytest.mark.parametrize(("window", "steps"), [(1.0, 1000), (0.5, 1000), (0.001, 0), (0.1, 0)])
def test_a_float_window_steps_every_batch_or_practically_never_depending_on_its_value(
        window, steps):
    assert sum((i + 1) % window == 0 for i in range(1000)) == steps


# ------------------------------------------------ a schedule sized in micro-batches


def _onecycle_after_updates(total_steps: int, updates: int) -> tuple[float, float]:
    """OneCycleLR (warm-up: the first 30 %) sized for total_steps, stepped `updates` times:
    the highest and the last learning rate it reached."""
    param = nn.Parameter(torch.zeros(1, dtype=DT))
    opt = torch.optim.SGD([param], lr=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=total_steps)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(updates):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return max(lrs), lrs[-1]


def test_a_schedule_sized_in_micro_batches_covers_only_one_kth_of_its_course():
    micro_batches = 1200  # len(dataloader) x num_epochs
    for k, warm_up_ends in ((2, True), (4, False)):  # the warm-up is 30 % of the course
        peak, last = _onecycle_after_updates(micro_batches, micro_batches // k)
        assert (peak > 0.999) is warm_up_ends
        assert last > 0.1  # the decay is never finished either way
    peak, last = _onecycle_after_updates(micro_batches // K, micro_batches // K)
    assert peak > 0.999 and last < 1e-4  # sized in updates: the whole course


# ------------------------------------------------ clipping every micro-batch


def test_clipping_every_micro_batch_changes_the_update_only_if_a_partial_sum_passes_max_norm():
    window = FIVE_WINDOWS[:K]
    model = mlp()
    partial = []
    for x, y in window[:-1]:
        (nn.functional.mse_loss(model(x), y) / K).backward()
        partial.append(flat_grad(model).norm().item())
    (nn.functional.mse_loss(model(window[-1][0]), window[-1][1]) / K).backward()
    full = flat_grad(model).norm().item()
    below = max(partial) * 1.01  # no partial sum reaches it
    assert full > below  # the once-per-window clip is active
    for max_norm, same in ((below, True), (min(partial) * 0.5, False)):
        per_micro = train(window, k=K, clip=max_norm, clip_at="micro", model=mlp())
        per_window = train(window, k=K, clip=max_norm, model=mlp())
        assert torch.allclose(per_micro.w, per_window.w, atol=1e-12) is same


# ------------------------------------------------ optimizer.eval()


def test_no_torch_optim_optimizer_has_eval_or_train():
    param = nn.Parameter(torch.zeros(2))
    optimizers = [cls for cls in vars(torch.optim).values()
                  if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)]
    assert len(optimizers) > 10
    for cls in optimizers:
        assert not hasattr(cls, "eval") and not hasattr(cls, "train"), cls
    with pytest.raises(AttributeError):
        torch.optim.SGD([param], lr=0.1).eval()


# ------------------------------------------------ small micro-batches cost time


class _CountOps(TorchDispatchMode):
    """Counts the operator calls torch dispatches: each one is a kernel launch on a GPU,
    a fixed cost whatever the number of samples it works on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def _operator_calls(model: nn.Module, x: torch.Tensor, k: int) -> int:
    with _CountOps() as ops:
        for chunk in x.chunk(k):
            (model(chunk).mean() / k).backward()
    return ops.calls


def test_with_small_micro_batches_an_epoch_launches_k_times_the_operators():
    """The not-faster key: 8 micro-batches of 8 make 8 passes, each launching as many
    operators as one pass over 64; a small model leaves each launch mostly fixed cost, so
    the epoch takes several times as long (a count, since timing belongs in benchmarks)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    x = torch.randn(64, 32)
    one = _operator_calls(model, x, 1)
    assert _operator_calls(model, x, 8) > 7 * one  # the same samples, 8 times the launches
