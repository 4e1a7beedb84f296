"""Deck claims that tell apart the mirror images of two mistakes (issue 24): stepping on
every micro-batch with .grad cleared every time, and a per-micro-batch scheduler."""

from __future__ import annotations

import pytest
import torch
from torch import nn

K, N = 4, 12  # accumulation_steps, micro-batches


def _data():
    torch.manual_seed(0)
    return [(torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 1, dtype=torch.float64))
            for _ in range(N)]


def _model():
    torch.manual_seed(1)
    return nn.Linear(2, 1).double()


def test_stepping_and_clearing_every_micro_batch_is_small_batch_sgd_with_a_k_times_smaller_step():
    data, lr = _data(), 0.1
    stepped, plain = _model(), _model()
    opt = torch.optim.SGD(stepped.parameters(), lr=lr)
    for x, y in data:  # the loop the step_every_batch text describes
        opt.zero_grad()
        (nn.functional.mse_loss(stepped(x), y) / K).backward()
        opt.step()
    small = torch.optim.SGD(plain.parameters(), lr=lr / K)
    for x, y in data:  # ordinary small-batch training, learning rate / K
        small.zero_grad()
        nn.functional.mse_loss(plain(x), y).backward()
        small.step()
    for a, b in zip(stepped.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def _rates(total_iters: int) -> list[float]:
    """The rate each update gets when a LinearLR is stepped on every micro-batch."""
    opt = torch.optim.SGD(_model().parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total_iters=total_iters)
    rates = []
    for i in range(N):
        scheduler.step()  # torch warns: scheduler before optimizer; the order is the point
        if (i + 1) % K == 0:
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
    return rates


@pytest.mark.filterwarnings("ignore:Detected call of")
def test_a_schedule_sized_in_micro_batches_stepped_per_micro_batch_ends_on_time():
    rates = _rates(total_iters=N)
    assert rates[-1] == pytest.approx(0.1) and rates[-2] != pytest.approx(0.1)


@pytest.mark.filterwarnings("ignore:Detected call of")
def test_a_schedule_sized_in_updates_stepped_per_micro_batch_runs_out_k_times_early():
    rates = _rates(total_iters=N // K)  # 3 updates
    assert rates[0] == pytest.approx(0.1)  # done after the first update's K = 4 steps

