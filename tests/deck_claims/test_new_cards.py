"""Deck claims of the cards for issue 24 point 8: token-weighted losses with padding
(token-loss-denominator, padded-mean-over-k), the effective batch and the learning rate
(effective-batch), bf16 without a GradScaler (bf16-no-scaler). DDP claims run two CPU
processes over gloo. The accelerate and DeepSpeed card (framework-accumulation) states
documented contracts; neither library is installed, so nothing here tests it."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from tests.helpers.distributed import spawn_ranks
from tests.helpers.token_windows import (
    SEQS,
    K,
    accumulated,
    lm,
    padded_window,
    token_loss,
    tokens,
    window_mean_grad,
)
from tests.helpers.training import assert_close, concat, make_batches, mlp, train

# ------------------------------------------- token-loss-denominator, padded-mean-over-k

WINDOW = padded_window()
WINDOW_TOKENS = sum(tokens(y) for _, y in WINDOW)


def test_summed_token_loss_over_the_windows_token_count_is_the_window_mean():
    right = accumulated(WINDOW, lambda m, x, y: token_loss(m, x, y, "sum") / WINDOW_TOKENS)
    assert_close(right, window_mean_grad(WINDOW))


def test_mean_over_k_is_not_the_per_token_mean_even_with_equal_micro_batches():
    assert {len(x) for x, _ in WINDOW} == {SEQS}  # every micro-batch holds 4 sequences
    bug = accumulated(WINDOW, lambda m, x, y: token_loss(m, x, y, "mean") / K)
    full = window_mean_grad(WINDOW)
    off = ((bug - full).norm() / full.norm()).item()
    assert off > 0.3  # measured 0.48 on this window
    # Not a constant factor a learning rate could absorb: the direction changes too.
    assert F.cosine_similarity(bug, full, dim=0).item() < 0.95  # measured 0.88


def test_mean_over_k_weighs_each_token_by_one_over_k_times_its_micro_batchs_count():
    weighted = accumulated(
        WINDOW, lambda m, x, y: token_loss(m, x, y, "sum") / (K * tokens(y)))
    bug = accumulated(WINDOW, lambda m, x, y: token_loss(m, x, y, "mean") / K)
    assert_close(weighted, bug)
    counts = [tokens(y) for _, y in WINDOW]
    assert counts == [47, 12, 43, 17]  # a token of the 2nd weighs 1/48, of the 1st 1/188


def test_ignore_index_leaves_padding_out_of_the_mean():
    model = lm()
    x, y = WINDOW[1]
    mean = token_loss(model, x, y, "mean")
    assert_close(mean, token_loss(model, x, y, "sum") / tokens(y))
    assert tokens(y) < y.numel()


def test_equal_token_counts_make_mean_over_k_exact():
    even = padded_window([[6, 6, 6, 6]] * K)
    bug = accumulated(even, lambda m, x, y: token_loss(m, x, y, "mean") / K)
    assert_close(bug, window_mean_grad(even))


@pytest.mark.parametrize(("chip", "factor"), [
    ("accumulation_steps", WINDOW_TOKENS / K),
    ("batch_size", WINDOW_TOKENS / SEQS),
])
def test_summed_loss_over_a_count_of_micro_batches_or_sequences_is_a_scaled_gradient(
        chip, factor):
    divisor = {"accumulation_steps": K, "batch_size": SEQS}[chip]
    wrong = accumulated(WINDOW, lambda m, x, y: token_loss(m, x, y, "sum") / divisor)
    assert_close(wrong, factor * window_mean_grad(WINDOW), tol=1e-10)
    assert factor > 7  # 29.75 and 29.75 here: the update is tens of times too large


def test_summed_loss_over_the_micro_batchs_own_count_is_k_times_the_mean_over_k():
    own = accumulated(WINDOW, lambda m, x, y: token_loss(m, x, y, "sum") / tokens(y))
    bug = accumulated(WINDOW, lambda m, x, y: token_loss(m, x, y, "mean") / K)
    assert_close(own, K * bug)


# ------------------------------------------------------------------- effective-batch


def test_linear_lr_scaling_is_not_the_same_as_the_small_batch_steps():
    """One step of 4 times the batch at 4 times the rate equals 4 small steps only to first
    order: the linear scaling rule is a starting point for a new batch size."""
    small = make_batches([3] * 4, seed=5)
    four_steps = train(small, k=1, lr=0.3, model=mlp())
    one_big = train(concat(small), k=1, lr=1.2, model=mlp())
    assert len(four_steps.step_grads) == 4 and len(one_big.step_grads) == 1
    gap = ((four_steps.w - one_big.w).norm() / four_steps.update.norm()).item()
    assert gap > 1e-3


WORLD, MICRO = 2, 3


def _flat_grad(model) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters()]).detach().clone()


def _regression(rank: int):
    g = torch.Generator().manual_seed(200 + rank)
    return [(torch.randn(MICRO, 4, generator=g, dtype=torch.float64),
             torch.randn(MICRO, 2, generator=g, dtype=torch.float64)) for _ in range(K)]


def _token_window(rank: int):
    # Rank 0 holds long sequences, rank 1 short ones: their token counts differ.
    lengths = [[12, 11], [12, 12], [10, 12], [12, 9]] if rank == 0 else [[2, 3], [4, 1],
                                                                         [3, 3], [2, 5]]
    return padded_window(lengths, seed=300 + rank)


def _rank(rank: int) -> dict:
    """One rank's gradients: a regression window and a token window counted two ways."""
    torch.manual_seed(0)
    plain = nn.Linear(4, 2).double()
    ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(plain))
    for x, y in _regression(rank):
        (F.mse_loss(ddp(x), y) / K).backward()
    result = {"regression": _flat_grad(ddp)}

    window = _token_window(rank)
    local = torch.tensor(sum(tokens(y) for _, y in window))
    total = local.clone()
    dist.all_reduce(total)  # counted before the first backward
    for name, divisor in (("local", int(local)), ("global", int(total) / WORLD)):
        model = nn.parallel.DistributedDataParallel(lm())
        for x, y in window:
            (token_loss(model, x, y, "sum") / divisor).backward()
        result[name] = _flat_grad(model)
    return result


@pytest.fixture(scope="module")
def ranks() -> dict:
    return spawn_ranks(_rank, WORLD)


def test_ddp_window_gradient_is_the_mean_over_micro_batch_x_k_x_world_samples(ranks):
    torch.manual_seed(0)
    single = nn.Linear(4, 2).double()
    samples = [batch for rank in range(WORLD) for batch in _regression(rank)]
    (x, y), = concat(samples)
    F.mse_loss(single(x), y).backward()
    for rank in ranks.values():  # DDP averages across ranks; it does not sum
        assert_close(rank["regression"], _flat_grad(single))


def test_ddp_token_loss_needs_the_all_reduced_count(ranks):
    everything = [b for rank in range(WORLD) for b in _token_window(rank)]
    full = window_mean_grad(everything)
    for rank in ranks.values():
        # The global count divided by the world size, since DDP then averages the ranks.
        assert_close(rank["global"], full)
        off = ((rank["local"] - full).norm() / full.norm()).item()
        assert off > 0.1


# ------------------------------------------------------------------- bf16-no-scaler


def _autocast_weight_grad(dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    """A layer's weight gradient when the loss's gradient is tiny (1e-9 per output)."""
    torch.manual_seed(0)
    layer, x = nn.Linear(16, 16), torch.randn(8, 16)
    with torch.autocast("cpu", dtype=dtype):
        out = layer(x)
        loss = (out.float() * 1e-9).sum()
    (loss * scale).backward()
    return layer.weight.grad / scale


def _fp32_weight_grad() -> torch.Tensor:
    torch.manual_seed(0)
    layer, x = nn.Linear(16, 16), torch.randn(8, 16)
    (layer(x) * 1e-9).sum().backward()
    return layer.weight.grad


def test_fp16_autocast_gradients_underflow_to_zero_without_scaling():
    assert torch.count_nonzero(_autocast_weight_grad(torch.float16)) == 0


def test_fp16_autocast_gradients_survive_with_loss_scaling():
    grad = _autocast_weight_grad(torch.float16, scale=65536.0)
    torch.testing.assert_close(grad, _fp32_weight_grad(), rtol=1e-2, atol=0)


def test_bf16_autocast_gradients_do_not_underflow_without_a_scaler():
    grad = _autocast_weight_grad(torch.bfloat16)
    reference = _fp32_weight_grad()
    assert torch.isfinite(grad).all() and torch.count_nonzero(grad) == grad.numel()
    # bf16 rounds to 8 significant bits: close, not exact (measured 0.4% in norm)
    assert ((grad - reference).norm() / reference.norm()).item() < 2e-2


def test_autocast_backward_runs_in_the_low_precision_type():
    torch.manual_seed(0)
    layer = nn.Linear(4, 4)
    seen = []
    with torch.autocast("cpu", dtype=torch.float16):
        out = layer(torch.randn(2, 4))
    out.register_hook(lambda g: seen.append(g.dtype))
    out.float().sum().backward()
    assert seen == [torch.float16]


def test_bf16_range_is_float32s_and_its_precision_is_lower_than_fp16s():
    bf16, fp16, fp32 = (torch.finfo(t) for t in (torch.bfloat16, torch.float16, torch.float32))
    assert bf16.tiny == fp32.tiny and bf16.max > 3e38
    assert fp16.tiny > 6e-5 and fp16.max == 65504  # tiny: the smallest normal number
    # below it only subnormals, down to about 6e-8; smaller values become zero
    assert torch.tensor(6e-8, dtype=torch.float16) > 0
    assert torch.tensor(2e-8, dtype=torch.float16) == 0
    assert torch.tensor(2e-8, dtype=torch.bfloat16) > 0
    assert bf16.eps > fp16.eps  # 8 significant bits against 11


def test_scaling_by_a_power_of_two_does_not_change_bf16_rounding():
    x = torch.randn(1000, dtype=torch.float64) * 1e-3
    plain = x.to(torch.bfloat16).double()
    scaled = (x * 65536).to(torch.bfloat16).double() / 65536
    assert torch.equal(plain, scaled)
