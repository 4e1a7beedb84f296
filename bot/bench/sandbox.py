"""Submission-to-verdict latency through the sandbox service, next to a fresh interpreter.

Both run the same small gradient-accumulation loop in the same run of the benchmark; the
fork-server side goes through the full isolation (namespaces, cgroups, seccomp). On the CPU,
the same run also measures a fleet behind Redis beside the unix socket (`sandbox_broker`).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time

from bot.bench.sandbox_broker import bench_broker, percentile
from bot.sandbox.client.client import SandboxClient
from bot.sandbox.process import PROJECT_ROOT, service_environment
from bot.sandbox.protocol import ServiceInfo

LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = torch.nn.MSELoss()
accumulation_steps = 4
data = [(torch.randn(4, 8, device=device), torch.randn(4, 1, device=device))
        for _ in range(12)]
optimizer.zero_grad()
for i, (inputs, targets) in enumerate(data):
    loss = criterion(model(inputs), targets) / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
print(round(float(loss) * accumulation_steps, 4))
"""
TARGET_P50_MS = 30.0
TARGET_SPEEDUP = 30.0
# The broker's throughput bursts: this many runs at once per `-n` (more than a FleetClient's
# 64 Redis connections at the default -n: a burst waits for connections, never fails).
BURST_PER_RUN = 4


def _fresh_interpreter(device: str) -> float:
    """The same loop as a new `python` process: import torch every time."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"device = {device!r}\n" + LOOP], check=True,
                   capture_output=True, env=service_environment(), cwd=PROJECT_ROOT)
    return (time.perf_counter() - start) * 1000


async def _forkserver(runs: int, device: str) -> tuple[ServiceInfo, list[float], str]:
    client = SandboxClient(runs_per_minute=10**9)
    info = await client.start()
    try:
        if device == "cuda" and not info.gpu:
            return info, [], ""
        for _ in range(3):  # warm: the pre-forked child and the page cache
            await client.run(LOOP, device=device)
        latencies, output = [], ""
        for _ in range(runs):
            start = time.perf_counter()
            result = await client.run(LOOP, device=device)
            latencies.append((time.perf_counter() - start) * 1000)
            if result.status != "ok":
                raise RuntimeError(f"benchmark loop failed: {result}")
            output = result.stdout.strip()
        return info, latencies, output
    finally:
        await client.stop()


def bench_sandbox(args) -> dict:
    device = getattr(args, "device", "cpu")
    runs = args.n or 40
    info, latencies, output = asyncio.run(_forkserver(runs, device))
    if not latencies:
        return {"benchmark": "sandbox", "device": device, "ok": False,
                "error": "no CUDA GPU on this machine: run this on a GPU host"}
    fresh = [_fresh_interpreter(device) for _ in range(5)]
    p50, fresh_p50 = statistics.median(latencies), statistics.median(fresh)
    speedup = fresh_p50 / p50
    broker = (bench_broker(runs, BURST_PER_RUN * runs) if device == "cpu"
              else {"skipped": "the broker is measured with --device cpu"})
    return {
        "benchmark": "sandbox",
        "device": device,
        "runs": runs,
        "p50_ms": round(p50, 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        "fresh_interpreter_runs": len(fresh),
        "fresh_interpreter_p50_ms": round(fresh_p50, 1),
        "speedup": round(speedup, 1),
        "targets": {"p50_ms": TARGET_P50_MS, "speedup": TARGET_SPEEDUP},
        "isolation": {"namespaces": ["user", "pid", "mount", "net", "ipc", "uts"],
                      "cgroups": bool(info.cgroups), "seccomp": True},
        "loop_output": output,
        "broker": broker,
        "ok": p50 < TARGET_P50_MS and speedup >= TARGET_SPEEDUP and broker.get("ok", True),
    }
