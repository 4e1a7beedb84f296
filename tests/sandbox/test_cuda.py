"""The sandbox's GPU path: only where a GPU is present (CI has none; see the README)."""

from __future__ import annotations

import os
import stat

import pytest
import pytest_asyncio

from bot.sandbox.client.client import SandboxClient
from bot.sandbox.jail.jail import _gpu_devices
from bot.sandbox.protocol import MEMORY, OK

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gpu_sandbox():
    if not os.path.exists("/dev/nvidiactl"):
        pytest.skip("no NVIDIA GPU on this machine: the CUDA path needs one")
    # What is tested is the GPU path; a GPU host lent for it may not delegate cgroups
    # (the memory limit has its own tests), so accept rlimits there.
    client = SandboxClient(runs_per_minute=10**6, allow_unbounded_memory=True)
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


async def test_only_device_nodes_are_bound_into_a_gpu_run(tmp_path):
    # An H200 host has /dev/nvidia-caps, a folder: binding it onto a file failed every run.
    os.mknod(tmp_path / "nvidia0", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.mknod(tmp_path / "nvidiactl", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    (tmp_path / "nvidia-caps").mkdir()
    (tmp_path / "nvidia-notes.txt").write_text("not a device")
    assert _gpu_devices(str(tmp_path)) == ("nvidia0", "nvidiactl")
