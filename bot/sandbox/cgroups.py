"""Per-child memory and process-count limits through cgroup v1 (where the host has it).

Each sandbox child gets its own group under `tutor-sandbox/`, so a memory or fork bomb is
contained to that child, and the kernel's OOM kill there is recognisable afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

from bot.sandbox.protocol import Limits

ROOT = Path("/sys/fs/cgroup")
GROUP = "tutor-sandbox"


class Cgroups:
    version = "v1"

    def __init__(self, limits: Limits, memory: Path, pids: Path):
        self.limits = limits
        self.memory, self.pids = memory, pids
        self._names = (f"{os.getpid()}-{n}" for n in itertools.count())

    @classmethod
    def create(cls, limits: Limits) -> Cgroups | None:
        """The controllers, or None where they cannot be used (rlimits still apply)."""
        memory, pids = ROOT / "memory" / GROUP, ROOT / "pids" / GROUP
        try:
            memory.mkdir(exist_ok=True)
            pids.mkdir(exist_ok=True)
            _remove_orphans(memory, pids)
            probe = cls(limits, memory, pids)
            name = probe.new()
            probe.remove(name)
        except OSError:
            return None
        return probe

    def new(self) -> str:
        name = next(self._names)
        (self.memory / name).mkdir()
        (self.pids / name).mkdir()
        limit = self.limits.memory_mb << 20
        (self.memory / name / "memory.limit_in_bytes").write_text(str(limit))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (self.memory / name / "memory.memsw.limit_in_bytes").write_text(str(limit))
        (self.pids / name / "pids.max").write_text(str(self.limits.pids))
        return name

    def procs_files(self, name: str) -> list[str]:
        """Where a pid is written to join the group (by whichever process forks it)."""
        return [str(controller / name / "cgroup.procs") for controller in (self.memory, self.pids)]

    def add(self, name: str, pid: int) -> None:
        for path in self.procs_files(name):
            Path(path).write_text(str(pid))

    def oom_killed(self, name: str) -> bool:
        try:
            control = (self.memory / name / "memory.oom_control").read_text()
        except OSError:
            return False
        counts = dict(line.split() for line in control.splitlines() if " " in line)
        return int(counts.get("oom_kill", 0)) > 0

    def remove(self, name: str) -> None:
        for controller in (self.memory, self.pids):
            with contextlib.suppress(OSError):
                (controller / name).rmdir()


def _remove_orphans(*controllers: Path) -> None:
    """Groups left by workers that are gone (named '<worker pid>-<n>')."""
    for controller in controllers:
        for group in controller.iterdir():
            owner = group.name.split("-", 1)[0]
            if group.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):  # still has a process: leave it
                    group.rmdir()
