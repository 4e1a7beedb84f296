"""What the sandbox tests share: small limits, and ways to see the service's jailed children
from the host (their processes, the call each one waits in)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from bot.sandbox.protocol import Limits

TEST_LIMITS = Limits(wall_s=3.0, cpu_s=5, memory_mb=384, data_mb=192, pids=16,
                     output_max_bytes=256 * 1024)
SANDBOX_UID = 65534
SYSCALLS = {"read": 0, "clock_nanosleep": 230, "select": 23, "pselect6": 270}


async def wait_until(condition: Callable[[], object], timeout_s: float = 60.0,
                     what: str = "condition"):
    """Poll `condition` until it returns something truthy; fail after a generous limit."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        await asyncio.sleep(0.02)
    return value


def _status(pid: str) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def jailed_processes(parent: int | None = None) -> list[int]:
    """Host pids running as the sandbox's user (optionally: children of `parent`'s zygote,
    or of `parent` itself)."""
    parents = None if parent is None else {str(parent)} | {
        str(pid) for pid in _children(parent)}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        status = _status(entry.name)
        if not status or status.get("State", "").startswith("Z"):
            continue
        if status.get("Uid", "").split()[:1] != [str(SANDBOX_UID)]:
            continue
        if parents is None or status.get("PPid") in parents:
            found.append(int(entry.name))
    return found


def _children(pid: int) -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _status(entry.name).get("PPid") == str(pid)]


def in_syscall(pid: int, name: str) -> bool:
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] == str(SYSCALLS[name])
    except (OSError, IndexError):
        return False


def sleeping_child(service_pid: int | None) -> int | None:
    """A jailed child of the worker that is running a submission's time.sleep()."""
    if service_pid is None:
        return None
    return next((pid for pid in jailed_processes(service_pid)
                 if in_syscall(pid, "clock_nanosleep")), None)
