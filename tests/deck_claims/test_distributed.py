"""DistributedDataParallel with accumulation (the ddp-no-sync card): two CPU processes over
gloo, so the claims hold for DDP's real all-reduce, not for a model of it."""

from __future__ import annotations

import contextlib
import copy
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

WORLD, K, BATCH = 2, 4, 3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _flat(tensors) -> torch.Tensor:
    return torch.cat([t.detach().flatten() for t in tensors])


def _window(model, batches, no_sync: bool) -> dict:
    """One window of K micro-batches, then a step: the gradient used and the weights."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(batches):
        last = i + 1 == len(batches)
        skip = no_sync and not last and hasattr(model, "no_sync")
        with model.no_sync() if skip else contextlib.nullcontext():
            (nn.functional.mse_loss(model(x), y) / K).backward()
    grad = _flat(p.grad for p in model.parameters())
    optimizer.step()
    return {"grad": grad, "weights": _flat(model.parameters())}


def _rank(rank: int, port: int, out: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        torch.manual_seed(0)  # the same initial weights on every rank
        plain = nn.Linear(4, 2).double()
        gen = torch.Generator().manual_seed(100 + rank)  # each rank its own micro-batches
        batches = [(torch.randn(BATCH, 4, generator=gen, dtype=torch.float64),
                    torch.randn(BATCH, 2, generator=gen, dtype=torch.float64))
                   for _ in range(K)]
        local = _window(copy.deepcopy(plain), batches, no_sync=False)
        expected = local["grad"].clone()
        dist.all_reduce(expected)  # what one big batch over both ranks would give
        expected /= WORLD
        result = {"expected": expected}
        for name, no_sync in (("no_sync", True), ("every_micro_batch", False)):
            ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(plain))
            result[name] = _window(ddp, batches, no_sync)
        out[rank] = result
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks() -> dict:
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.fail("the DDP claims need torch.distributed with gloo")
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(_rank, args=(_free_port(), out), nprocs=WORLD, join=True)
        return dict(out)


def test_no_sync_micro_batches_still_count_in_the_averaged_gradient(ranks):
    for rank in ranks.values():
        assert torch.allclose(rank["no_sync"]["grad"], rank["expected"], atol=1e-12)


def test_no_sync_gives_the_same_update_as_syncing_every_micro_batch(ranks):
    for rank in ranks.values():
        assert torch.allclose(rank["no_sync"]["grad"], rank["every_micro_batch"]["grad"],
                              atol=1e-12)
        assert torch.allclose(rank["no_sync"]["weights"], rank["every_micro_batch"]["weights"],
                              atol=1e-12)


def test_with_no_sync_the_replicas_stay_identical(ranks):
    assert torch.equal(ranks[0]["no_sync"]["weights"], ranks[1]["no_sync"]["weights"])
