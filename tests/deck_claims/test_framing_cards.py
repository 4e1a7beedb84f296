"""Deck claims of the cards reworded against give-aways: step-frequency (the window counts
micro-batches), purpose (accumulation leaves weight, gradient and optimizer-state memory as
it is), zero-grad (no optimizer.clip_grad_norm_), printed-loss (.item() reads a loss that
requires grad)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.helpers.training import samples_per_update


@pytest.mark.parametrize(("window", "samples"), [(4, 64), (16, 256), (64, 1024)])
def test_the_window_counts_micro_batches_not_samples(window, samples):
    assert samples_per_update(window) == {samples}


def _state_numel(k: int) -> int:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters())
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    for xs, ys in zip(x.chunk(k), y.chunk(k), strict=True):
        (nn.functional.mse_loss(model(xs), ys) / k).backward()
    optimizer.step()
    tensors = [*model.parameters(), *(p.grad for p in model.parameters())]
    tensors += [t for s in optimizer.state.values() for t in s.values()
                if torch.is_tensor(t) and t.dim() > 0]
    return sum(t.numel() for t in tensors)


def test_accumulation_leaves_weights_gradients_and_adam_state_the_same_size():
    # One batch of 64 or 8 micro-batches of 8: the same tensors, the same size; Adam keeps
    # two per parameter (exp_avg, exp_avg_sq).
    assert _state_numel(1) == _state_numel(8)
    params = sum(p.numel() for p in nn.Sequential(nn.Linear(8, 32), nn.Linear(32, 1))
                 .parameters())
    assert _state_numel(8) == 4 * params


def test_the_optimizer_has_no_clip_grad_norm():
    optimizer = torch.optim.SGD([nn.Parameter(torch.ones(2))], lr=0.1)
    with pytest.raises(AttributeError):
        optimizer.clip_grad_norm_()
    assert callable(torch.nn.utils.clip_grad_norm_)


def test_the_divided_loss_requires_grad_and_item_still_reads_it():
    w = nn.Parameter(torch.tensor([2.0]))
    loss = (w * w).sum() / 2
    assert loss.requires_grad
    loss.backward()  # division is differentiable: d(w^2 / 2)/dw = w
    assert w.grad.item() == 2.0
    assert loss.item() == 2.0  # the print works, before or after backward()
    with pytest.raises(RuntimeError, match="requires grad"):
        loss.numpy()
    assert loss.detach().numpy() == 2.0
