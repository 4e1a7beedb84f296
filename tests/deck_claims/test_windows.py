"""Deck claims about accumulation windows: the off-by-one condition, where zero_grad(),
step() and backward() go, the leftover partial window, None grads, loss.detach()."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.helpers.training import (
    DT,
    FIVE_WINDOWS,
    ONE_WINDOW,
    B,
    K,
    assert_close,
    assert_differ,
    linear_model,
    make_batches,
    make_optimizer,
    mlp,
    probe_batches,
    probe_loss,
    probe_model,
    train,
    window_members,
)

# ------------------------------------------------ 5. .grad None: the parameter is skipped


def test_zero_grad_sets_grads_to_none_by_default():
    res = train(ONE_WINDOW, k=K)
    assert all(p.grad is None for p in res.model.parameters())
    res.optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is None for p in res.model.parameters())  # None stays None
    train_one = train(ONE_WINDOW[:1], k=2, flush_last=False)  # no step, no clearing
    train_one.optimizer.zero_grad(set_to_none=False)
    assert all(torch.count_nonzero(p.grad) == 0 for p in train_one.model.parameters())


@pytest.mark.parametrize(
    ("opt", "kw"),
    [("sgd", {"momentum": 0.9, "weight_decay": 0.1}), ("adamw", {"weight_decay": 0.1})],
)
def test_optimizer_step_skips_a_parameter_whose_grad_is_none(opt, kw):
    torch.manual_seed(0)
    used = nn.Parameter(torch.randn(3, dtype=DT))
    unused = nn.Parameter(torch.randn(3, dtype=DT))
    optimizer = make_optimizer(opt, [used, unused], lr=0.1, **kw)
    before = unused.detach().clone()
    for _ in range(3):
        optimizer.zero_grad()  # set_to_none=True: both .grad are None again
        assert used.grad is None and unused.grad is None
        (used**2).sum().backward()
        assert unused.grad is None
        optimizer.step()
    assert torch.equal(unused.detach(), before)  # no decay, no momentum: untouched
    assert unused not in optimizer.state or not optimizer.state[unused]

    # Even with a momentum buffer from an earlier step, a None grad means no movement.
    (unused.sum() + used.sum()).backward()
    optimizer.step()
    moved = unused.detach().clone()
    assert not torch.equal(moved, before)
    optimizer.zero_grad()
    (used**2).sum().backward()
    optimizer.step()
    assert torch.equal(unused.detach(), moved)


@pytest.mark.parametrize(
    ("opt", "kw"),
    [("sgd", {"momentum": 0.9, "weight_decay": 0.1}), ("adamw", {"weight_decay": 0.1})],
)
def test_a_zero_grad_tensor_is_not_skipped_and_weight_decay_moves_the_parameter(opt, kw):
    torch.manual_seed(0)
    p = nn.Parameter(torch.randn(3, dtype=DT))
    optimizer = make_optimizer(opt, [p], lr=0.1, **kw)
    before = p.detach().clone()
    p.grad = torch.zeros_like(p)  # what zero_grad(set_to_none=False) leaves
    optimizer.step()
    assert_differ(p.detach(), before, at_least=1e-3)


# ------------------------------------------------ 6. the off-by-one window condition


def test_i_mod_k_steps_after_micro_batch_1_then_k_plus_1_each_window_one_batch_late():
    n, k = 13, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                condition="off_by_one", flush_last=False)
    assert res.step_after == [1, 5, 9, 13]  # 1, k+1, 2k+1, 3k+1 (1-based)
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [[1], [2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 12, 13]]
    intended_ends = [k, 2 * k, 3 * k]
    assert [w[-1] - end for w, end in zip(windows[1:], intended_ends, strict=True)] == [1, 1, 1]


def test_i_plus_1_mod_k_steps_after_k_2k_3k_with_k_micro_batches_each():
    n, k = 12, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                flush_last=False)
    assert res.step_after == [4, 8, 12]
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]


# ------------------------------------------------ 7. loss.detach()


def test_detach_returns_a_new_tensor_sharing_storage_without_grad_and_backward_raises():
    model = linear_model()
    (x, y), = ONE_WINDOW[:1]
    loss = nn.functional.mse_loss(model(x), y)
    detached = loss.detach()
    assert detached is not loss
    assert detached.data_ptr() == loss.data_ptr()
    assert detached.untyped_storage().data_ptr() == loss.untyped_storage().data_ptr()
    assert detached.requires_grad is False
    assert detached.grad_fn is None
    assert loss.grad_fn is not None  # the original keeps its graph
    with pytest.raises(RuntimeError, match="does not require grad"):
        detached.backward()
    assert all(p.grad is None for p in model.parameters())
    # Shared storage, not a copy: an in-place change shows through the original.
    with torch.no_grad():
        detached.add_(1.0)
    assert loss.item() == detached.item()


# ------------------------------------------------ 9. zero_grad() before every backward()


def test_zero_grad_before_every_backward_leaves_only_the_last_micro_batchs_scaled_gradient():
    n, k = 8, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                zero_grad_at="micro")
    assert [window_members(g, 1 / k) for g in res.step_grads] == [[4], [8]]

    # On a real model: the weights equal two steps on the last micro-batch of each window.
    batches = make_batches([B] * 8)
    wiped = train(batches, k=k, zero_grad_at="micro", model=mlp())
    last_only = train([batches[3], batches[7]], k=1, loss_scale=1 / k, model=mlp())
    assert_close(wiped.w, last_only.w)


# ------------------------------------------------ 10. step() every micro-batch


def test_step_every_micro_batch_with_zero_grad_per_window_applies_early_micro_batches_repeatedly():
    n, k, lr = 8, 4, 1.0
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss, lr=lr,
                step_at="micro")
    # Each weight moved by -lr / k per step that saw micro-batch i in .grad.
    times_applied = (-res.update * k / lr).round().to(torch.int64).tolist()
    assert times_applied == [4, 3, 2, 1, 4, 3, 2, 1]  # k, k-1, ..., 1 in every window

    accumulation = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                         lr=lr)
    assert (-accumulation.update * k / lr).round().tolist() == [1.0] * n


def test_step_every_micro_batch_without_per_batch_zero_grad_differs_from_accumulation_and_sgd():
    batches = make_batches([B] * 8)
    partial_sums = train(batches, k=K, step_at="micro", model=mlp())
    accumulation = train(batches, k=K, model=mlp())
    small_batch = train(batches, k=1, model=mlp())  # zero_grad and step every batch
    small_batch_scaled = train(batches, k=1, loss_scale=1 / K, model=mlp())
    assert len(partial_sums.step_grads) == 8
    for other in (accumulation, small_batch, small_batch_scaled):
        assert_differ(partial_sums.w, other.w, at_least=1e-3)


# ------------------------------------------------ more deck mistakes: missing_zero_grad,
# step_before_backward, missing_backward


def test_never_clearing_gradients_makes_every_update_carry_all_earlier_windows():
    n, k = 12, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                zero_grad_at="never")
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [list(range(1, 5)), list(range(1, 9)), list(range(1, 13))]
    assert [g.norm().item() ** 2 * k * k for g in res.step_grads] == pytest.approx([4, 8, 12])


def test_stepping_before_backward_misses_the_last_micro_batch_which_lands_in_the_next_window():
    n, k = 8, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                backward_at="after_step")
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [[1, 2, 3], [4, 5, 6, 7]]
    # ... and the last micro-batch's gradient is left over in .grad at the end.
    assert window_members(res.model.weight.grad.flatten(), 1 / k) == [8]


def test_backward_only_on_the_last_micro_batch_makes_each_update_use_that_micro_batch():
    n, k = 8, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                backward_at="window_end")
    assert [window_members(g, 1 / k) for g in res.step_grads] == [[4], [8]]


@pytest.mark.parametrize(("opt", "kw"), [("sgd", {"momentum": 0.9, "weight_decay": 0.1}),
                                         ("adamw", {"weight_decay": 0.1})])
def test_without_any_backward_grads_stay_none_and_step_moves_nothing(opt, kw):
    res = train(FIVE_WINDOWS, k=K, opt=opt, opt_kwargs=kw, backward_at="never", model=mlp())
    assert res.step_grads == [None] * 5  # step() ran five times, on None grads
    assert all(p.grad is None for p in res.model.parameters())
    assert torch.equal(res.w, res.w0)


# ------------------------------------------------ 15. the partial last window leaks


def test_unflushed_partial_last_window_leaks_into_the_first_window_of_the_next_epoch():
    n, k = 5, 2
    leak = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                 flush_last=False, zero_grad_each_epoch=False, epochs=2)
    windows = [window_members(g, 1 / k) for g in leak.step_grads]
    # Epoch 1: [1, 2], [3, 4]; micro-batch 5 stays in .grad and joins epoch 2's first window.
    assert windows == [[1, 2], [3, 4], [1, 2, 5], [3, 4]]

    flushed = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                    zero_grad_each_epoch=False, epochs=2)
    assert [window_members(g, 1 / k) for g in flushed.step_grads] == [
        [1, 2], [3, 4], [5], [1, 2], [3, 4], [5]]
    cleared = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                    flush_last=False, epochs=2)  # zero_grad() at the start of every epoch
    assert [window_members(g, 1 / k) for g in cleared.step_grads] == [
        [1, 2], [3, 4], [1, 2], [3, 4]]


def test_flushed_partial_window_with_loss_over_k_gets_r_over_k_of_its_mean_gradient():
    """Nuance for the deck's reference loop: it flushes the partial last window but still
    divides by accumulation_steps, so a last window of r < k micro-batches steps with r / k
    times its mean gradient (a smaller last update), not the window's mean gradient."""
    batches = make_batches([3] * 5, seed=6)  # k = 4: windows of 4 and 1 micro-batches
    res = train(batches, k=4, lr=0.0, model=mlp())
    last_mean = train(batches[4:], k=1, lr=0.0, model=mlp()).step_grads[0]
    assert_close(res.step_grads[1], last_mean / 4)
