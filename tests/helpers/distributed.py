"""Real multi-process torch.distributed runs for the deck's DDP claims (gloo, on the CPU)."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn_ranks(rank: Callable, world: int) -> dict:
    """Runs `rank(rank_index, port, out)` in `world` processes; what each put in `out`."""
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.fail("the DDP claims need torch.distributed with gloo")
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(rank, args=(free_port(), out), nprocs=world, join=True)
        return dict(out)
