"""DistributedDataParallel with accumulation (the ddp-no-sync and unequal-micro-batches
cards): two CPU processes over gloo, so the claims hold for DDP's real all-reduce, not for a
model of it. A communication hook counts the all-reduces each window runs."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from tests.helpers.distributed import spawn_ranks

WORLD, K, BATCH = 2, 4, 3


def _flat(tensors) -> torch.Tensor:
    return torch.cat([t.detach().flatten() for t in tensors])


def _all_reduces(model) -> list[torch.Tensor]:
    """The gradient buckets DDP all-reduces, as they were before it (the hook then does the
    usual average)."""
    sent: list[torch.Tensor] = []

    def hook(state, bucket):
        sent.append(bucket.buffer().detach().clone())
        return default_hooks.allreduce_hook(state, bucket)

    model.register_comm_hook(None, hook)
    return sent


def _window(model, batches, wrap: str) -> dict:
    """One window of K micro-batches, then a step: the gradient used, the weights and the
    all-reduces run. wrap: what of the first K - 1 micro-batches runs inside no_sync():
    "none", "forward_and_backward" or "backward" (the forward outside it)."""
    ddp = hasattr(model, "no_sync")
    sent = _all_reduces(model) if ddp else []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(batches):
        skip = ddp and i + 1 < len(batches)
        whole = skip and wrap == "forward_and_backward"
        with model.no_sync() if whole else contextlib.nullcontext():
            loss = nn.functional.mse_loss(model(x), y) / K
            with model.no_sync() if skip and wrap == "backward" else contextlib.nullcontext():
                loss.backward()
    grad = _flat(p.grad for p in model.parameters())
    optimizer.step()
    return {"grad": grad, "weights": _flat(model.parameters()), "all_reduces": len(sent),
            "last_sent": sent[-1] if sent else None}


def _batches(gen, sizes) -> list:
    return [(torch.randn(n, 4, generator=gen, dtype=torch.float64),
             torch.randn(n, 2, generator=gen, dtype=torch.float64)) for n in sizes]


def _sample_mean_window(model, batches, divisor: float) -> torch.Tensor:
    """Per-sample losses summed and divided by `divisor`; returns the gradient used."""
    for x, y in batches:
        per_sample = nn.functional.mse_loss(model(x), y, reduction="none").mean(dim=1)
        (per_sample.sum() / divisor).backward()
    return _flat(p.grad for p in model.parameters())


def _unequal_counts(plain, rank: int) -> dict:
    """Rank 0 holds 12 samples in its window, rank 1 holds 10: weigh every sample alike."""
    gen = torch.Generator().manual_seed(200 + rank)
    batches = _batches(gen, [3, 3, 3, 3] if rank == 0 else [3, 3, 3, 1])
    local = torch.tensor(float(sum(len(x) for x, _ in batches)), dtype=torch.float64)
    total = local.clone()
    dist.all_reduce(total)  # counted before the first backward()
    expected = _sample_mean_window(copy.deepcopy(plain), batches, 1.0)
    dist.all_reduce(expected)
    expected /= total  # the mean over the 22 samples of both ranks
    result = {"expected": expected}
    for name, count in (("global_count", total), ("local_count", local)):
        ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(plain))
        # DDP averages over the ranks, so the world size cancels its division
        result[name] = _sample_mean_window(ddp, batches, count.item() / WORLD)
    return result


def _rank(rank: int) -> dict:
    """One rank's windows: no_sync around each part of the loop, and unequal counts."""
    torch.manual_seed(0)  # the same initial weights on every rank
    plain = nn.Linear(4, 2).double()
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own micro-batches
    batches = _batches(gen, [BATCH] * K)
    local = _window(copy.deepcopy(plain), batches, wrap="none")
    expected = local["grad"].clone()
    dist.all_reduce(expected)  # what one big batch over both ranks would give
    expected /= WORLD
    result = {"expected": expected, "unequal": _unequal_counts(plain, rank)}
    for wrap in ("forward_and_backward", "backward", "none"):
        ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(plain))
        result[wrap] = _window(ddp, batches, wrap)
    return result


@pytest.fixture(scope="module")
def ranks() -> dict:
    return spawn_ranks(_rank, WORLD)


def test_no_sync_micro_batches_still_count_in_the_averaged_gradient(ranks):
    for rank in ranks.values():
        assert torch.allclose(rank["forward_and_backward"]["grad"], rank["expected"], atol=1e-12)


def test_no_sync_gives_the_same_update_as_syncing_every_micro_batch(ranks):
    for rank in ranks.values():
        synced, skipped = rank["none"], rank["forward_and_backward"]
        assert torch.allclose(skipped["grad"], synced["grad"], atol=1e-12)
        assert torch.allclose(skipped["weights"], synced["weights"], atol=1e-12)


def test_with_no_sync_the_replicas_stay_identical(ranks):
    assert torch.equal(ranks[0]["forward_and_backward"]["weights"],
                       ranks[1]["forward_and_backward"]["weights"])


def test_no_sync_around_forward_and_backward_leaves_one_all_reduce_per_window(ranks):
    for rank in ranks.values():
        assert rank["none"]["all_reduces"] == K
        assert rank["forward_and_backward"]["all_reduces"] == 1


def test_each_all_reduce_averages_all_that_grad_holds_not_only_the_new_gradient(ranks):
    """Syncing every micro-batch: the last all-reduce sends the running sum (earlier parts
    already equal on both ranks), and averaging it gives the window's gradient."""
    averaged = (ranks[0]["none"]["last_sent"] + ranks[1]["none"]["last_sent"]) / WORLD
    expected = ranks[0]["expected"]  # the bucket orders the values its own way
    assert averaged.numel() == expected.numel()
    assert torch.allclose(averaged.sort().values, expected.sort().values, atol=1e-12)


def test_no_sync_around_backward_only_still_all_reduces_every_micro_batch(ranks):
    """DDP decides in forward() whether the backward will sync: a forward outside no_sync()
    arms the all-reduce, and a backward inside it runs it anyway."""
    for rank in ranks.values():
        assert rank["backward"]["all_reduces"] == K
        assert torch.allclose(rank["backward"]["grad"], rank["expected"], atol=1e-12)


def test_unequal_windows_need_the_sample_count_all_reduced_across_ranks(ranks):
    for rank in ranks.values():
        unequal = rank["unequal"]
        assert torch.allclose(unequal["global_count"], unequal["expected"], atol=1e-12)
        assert not torch.allclose(unequal["local_count"], unequal["expected"], atol=1e-3)
