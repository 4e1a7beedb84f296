"""The broker part of `tutor bench sandbox`: a sandbox fleet behind Redis beside the unix socket.

Everything runs on this machine and is started here: a throwaway `redis-server` on loopback
(`LocalRedis`), fleet hosts (`python -m bot.sandbox.service` with SANDBOX_BROKER set) and one
`--listen unix:` service. The same tiny run goes through the socket and through Redis,
interleaved after a warm-up (latency); then bursts of runs from distinct learners go to one
host and to two (throughput). Every process is stopped on the way out, errors included.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bot.bench.local_redis import LocalRedis
from bot.sandbox.client.client import SandboxClient
from bot.sandbox.client.fleet import FleetClient
from bot.sandbox.process import PROJECT_ROOT, service_environment
from bot.sandbox.service.service import BROKER_VARIABLE

CODE = "print(1)"  # the verdict path, not the learner's work: what the broker adds shows
WARM_RUNS = 3
BURSTS = 3  # per host count; the median is reported
TARGET_OVERHEAD_MS = 3.0
TARGET_THROUGHPUT_RATIO = 0.9  # two hosts vs one: must not fall (less noise on a shared box)
START_TIMEOUT_S = 120.0  # a service imports torch and warms its zygote first


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _die_with_the_bench() -> None:
    """In the child: SIGTERM when the bench dies, even killed outright (a test's timeout)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


class _Services:
    """The sandbox services this benchmark starts: each is stopped (SIGTERM, then a wait)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.processes: list[asyncio.subprocess.Process] = []

    async def start(self, *args: str, broker: str | None = None) -> asyncio.subprocess.Process:
        env = service_environment()
        if broker:
            env[BROKER_VARIABLE] = broker  # the password travels in the environment only
        with open(self.folder / f"service-{len(self.processes)}.log", "wb") as log:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.sandbox.service", *args, cwd=PROJECT_ROOT, env=env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=log, preexec_fn=_die_with_the_bench)
        self.processes.append(proc)
        return proc

    def check_alive(self) -> None:
        for index, proc in enumerate(self.processes):
            if proc.returncode is not None:
                log = (self.folder / f"service-{index}.log").read_text(errors="replace")
                raise RuntimeError(f"a sandbox service exited ({proc.returncode}): "
                                   f"{log[-1500:]}")

    async def close(self) -> None:
        for proc in reversed(self.processes):
            if proc.returncode is None:
                proc.terminate()  # a fleet host finishes the runs in hand, then leaves
                try:
                    await asyncio.wait_for(proc.wait(), 30)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()

    async def until(self, condition, what: str) -> None:
        """Wait for `condition()` (awaited) to hold while the services live: they import
        torch and warm a zygote first, slowly on a busy machine."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT_S
        while not await condition():
            self.check_alive()
            if loop.time() > deadline:
                raise RuntimeError(f"{what} within {START_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.05)


async def _hosts_up(fleet: FleetClient, services: _Services, count: int) -> int:
    """Wait until `count` hosts report in the cpu pool; return their slots in all."""
    async def reported() -> bool:  # stats: a fresh look at the hosts
        return len((await fleet.stats()).in_flight) >= count

    await services.until(reported, f"no {count} fleet hosts reported")
    return (await fleet.info()).slots or 0


async def _timed(run) -> float:
    start = time.perf_counter()
    result = await run()
    elapsed = (time.perf_counter() - start) * 1000
    if result.status != "ok" or result.stdout.strip() != "1":
        raise RuntimeError(f"benchmark run failed: {result}")
    return elapsed


async def _latency(unix: SandboxClient, fleet: FleetClient, runs: int) -> dict:
    """The same run through the socket and through Redis, alternately."""
    paths = {"unix": lambda: unix.run(CODE), "broker": lambda: fleet.run(CODE)}
    for _ in range(WARM_RUNS):
        for run in paths.values():
            await _timed(run)
    times: dict[str, list[float]] = {name: [] for name in paths}
    for i in range(runs):  # each goes first half the time
        for name, run in list(paths.items())[::1 if i % 2 else -1]:
            times[name].append(await _timed(run))
    report = {}
    for name, values in times.items():
        report[f"{name}_p50_ms"] = round(statistics.median(values), 2)
        report[f"{name}_p95_ms"] = round(percentile(values, 0.95), 2)
    report["overhead_p50_ms"] = round(report["broker_p50_ms"] - report["unix_p50_ms"], 2)
    return report


async def _burst(fleet: FleetClient, runs: int, tag: str) -> float:
    """`runs` learners submit at once; runs per second until the last verdict."""
    start = time.perf_counter()
    await asyncio.gather(*(_timed(lambda i=i: fleet.run(CODE, learner=f"{tag}-{i}"))
                           for i in range(runs)))
    return runs / (time.perf_counter() - start)


async def _throughput(fleet: FleetClient, runs: int, tag: str) -> float:
    await _burst(fleet, runs, f"{tag}-warm")  # every host's zygote and page cache
    rates = [await _burst(fleet, runs, f"{tag}-{n}") for n in range(BURSTS)]
    return statistics.median(rates)


async def _measure(redis: LocalRedis, folder: Path, runs: int, burst: int) -> dict:
    services = _Services(folder)
    socket_path = folder / "sandbox.sock"
    socket_address = f"unix:{socket_path}"
    fleet = FleetClient(redis.bot_url, max_queue=2 * burst, runs_per_minute=10**9)
    unix = SandboxClient(address=socket_address, runs_per_minute=10**9)
    started: list = []
    try:
        await services.start("--listen", socket_address)
        await services.start(broker=redis.host_url)
        await fleet.start()
        started.append(fleet)

        async def listening() -> bool:
            return socket_path.exists()

        await services.until(listening, "the unix socket service did not listen")
        await unix.start()
        started.append(unix)
        one_slots = await _hosts_up(fleet, services, 1)
        report = await _latency(unix, fleet, runs)
        one = await _throughput(fleet, burst, "one")
        await services.start(broker=redis.host_url)
        two_slots = await _hosts_up(fleet, services, 2)
        two = await _throughput(fleet, burst, "two")
        report["throughput"] = {
            "runs_at_once": burst, "bursts": BURSTS,
            "slots": {"one_host": one_slots, "two_hosts": two_slots},
            "one_host_runs_per_s": round(one, 1), "two_hosts_runs_per_s": round(two, 1),
            "ratio": round(two / one, 2)}
        report["refusals"] = dict(fleet.refusals)
        return report
    finally:
        try:
            for client in reversed(started):
                with contextlib.suppress(Exception):
                    await client.stop()
        finally:
            await services.close()


def bench_broker(runs: int, burst: int) -> dict:
    """p50/p95 through Redis and through the unix socket, and runs/s on one host vs two."""
    try:
        redis = LocalRedis()
    except RuntimeError:
        return {"skipped": "redis-server not installed"}
    folder = Path(tempfile.mkdtemp(prefix="tutor-bench-"))
    try:
        with redis:
            report = asyncio.run(_measure(redis, folder, runs, burst))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report = {"code": CODE, "runs": runs, **report,
              "targets": {"overhead_p50_ms": TARGET_OVERHEAD_MS,
                          "throughput_ratio": TARGET_THROUGHPUT_RATIO}}
    report["ok"] = (report["overhead_p50_ms"] < TARGET_OVERHEAD_MS
                    and report["throughput"]["ratio"] >= TARGET_THROUGHPUT_RATIO)
    return report
