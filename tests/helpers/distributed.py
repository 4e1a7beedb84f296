"""Real multi-process torch.distributed runs for the deck's DDP claims (gloo, on the CPU)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn_ranks(rank: Callable[[int], dict], world: int) -> dict:
    """Runs `rank(index)` in `world` processes joined in one gloo process group; what each
    returned, by index."""
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.fail("the DDP claims need torch.distributed with gloo")
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(_in_group, args=(rank, world, free_port(), out), nprocs=world, join=True)
        return dict(out)


def _in_group(index: int, rank: Callable[[int], dict], world: int, port: int,
              out: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=index, world_size=world)
    try:
        out[index] = rank(index)
    finally:
        dist.destroy_process_group()
