"""The sandbox's GPU path: only where a GPU is present (CI has none; see the README)."""

from __future__ import annotations

import os

import pytest
import pytest_asyncio

from bot.sandbox.client import SandboxClient
from bot.sandbox.protocol import MEMORY, OK

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/dev/nvidiactl"),
                       reason="no NVIDIA GPU on this machine: the CUDA path needs one"),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gpu_sandbox():
    client = SandboxClient(runs_per_minute=10**6)
    info = await client.start()
    assert info.gpu
    yield client
    await client.stop()


async def test_learner_code_gets_the_gpu(gpu_sandbox):
    result = await gpu_sandbox.run(
        "import torch\nx = torch.ones(1024, device=device)\nprint(device, x.sum().item())",
        device="cuda")
    assert (result.status, result.stdout) == (OK, "cuda 1024.0\n")


async def test_gpu_memory_is_capped(gpu_sandbox):
    # The child may use a quarter of the card (Limits.gpu_memory_fraction): ask for a third.
    result = await gpu_sandbox.run(
        "import torch\ntotal = torch.cuda.get_device_properties(0).total_memory\n"
        "x = torch.empty(total // 3, dtype=torch.uint8, device=device)", device="cuda")
    assert result.status == MEMORY


async def test_the_worker_never_initialised_cuda(gpu_sandbox):
    for _ in range(2):  # a parent with CUDA initialised would break every forked child
        result = await gpu_sandbox.run("import torch\nprint(torch.cuda.is_available())",
                                       device="cuda")
        assert result.stdout == "True\n"
