"""Per-child memory and process-count limits through cgroups: v1 or v2, whichever the host has.

Each sandbox child gets its own group under `tutor-sandbox/`, so a memory or fork bomb is
contained to that child, and the kernel's OOM kill there is recognisable afterwards. The
RLIMIT_DATA set in the jail does not count shared mappings (mmap(-1, ...) touched page by
page): only a cgroup bounds those. Where no cgroup can be used, `Cgroups.create` returns
None and keeps the reason in `last_problem`, so the caller can say so in one log line.

Which backend:
- v1 where `/sys/fs/cgroup/memory` is a v1 memory controller mount (this includes hybrid
  hosts): groups under `memory/tutor-sandbox` and `pids/tutor-sandbox`, as before.
- v2 on a pure unified host (`/sys/fs/cgroup/cgroup.controllers` exists): the memory and pids
  controllers are delegated down from this process's own cgroup (see `_V2.setup`).

Call `create` in the process that forks the jailed children, BEFORE it starts any other
process: on v2 it moves itself into a leaf cgroup, and only processes it starts afterwards
follow it there. A process of someone else's left in its cgroup makes v2 delegation fail.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import select
import signal
import time
from pathlib import Path

from bot.sandbox.protocol import Limits

ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
GROUP = "tutor-sandbox"  # the children's groups live under this one
SERVICE_LEAF = "tutor-service"  # v2: the leaf the service moves into (no internal processes rule)
CONTROLLERS = ("memory", "pids")
# Where the host has it, each child is also held to one CPU's worth (and the children share
# the CPUs equally, however many threads one of them starts): slots can then outnumber the
# CPUs, since a sleeping run uses none.
CPU_PERIOD_US = 100_000
MIB = 1 << 20
V1_UNLIMITED = 1 << 62  # v1 reports "no limit" as a huge page-aligned number
REMOVE_WAIT_S = 2.0

last_problem: str | None = None  # why the last `Cgroups.create` returned None
_serial = itertools.count()  # per process, so two Cgroups objects never pick the same name


class Unavailable(Exception):
    """No usable cgroup on this host; the message says why and what would help."""


class Cgroups:
    """The interface the service (and the doctor) use; `_V1` and `_V2` fill it in."""

    version = ""

    def __init__(self, limits: Limits, groups: tuple[Path, ...]):
        self.limits = limits
        self.groups = groups  # the `tutor-sandbox` group in each hierarchy used
        self.held: dict = {}  # the limits read back from the probe group in `create`

    @staticmethod
    def create(limits: Limits, root: Path = ROOT,
               proc_cgroup: Path = PROC_SELF_CGROUP) -> Cgroups | None:
        """The backend this host supports, checked by making, reading back and removing a
        probe group; or None (rlimits still apply) with the reason in `last_problem`."""
        global last_problem
        try:
            if (root / "memory" / "memory.limit_in_bytes").is_file():
                cgroups: Cgroups = _V1.setup(limits, root)
            elif (root / "cgroup.controllers").is_file():
                cgroups = _V2.setup(limits, root, proc_cgroup)
            else:
                raise Unavailable(f"{root} has neither a cgroup v1 memory controller nor a "
                                  "cgroup v2 hierarchy")
            cgroups.sweep_orphans()
            name = cgroups.new()
            try:
                cgroups.held = cgroups.read_limits(name)
            finally:
                cgroups.remove(name)
        except Unavailable as exc:
            last_problem = str(exc)
            return None
        except OSError as exc:
            last_problem = f"cannot use cgroups under {root}: {exc}"
            return None
        last_problem = None
        return cgroups

    # -- per child -----------------------------------------------------------------------

    def new(self) -> str:
        """A fresh group with the limits; its name is `<our pid>-<n>`, so groups left by a
        service that died can be told apart and swept at the next start."""
        name = f"{os.getpid()}-{next(_serial)}"
        try:
            for group in self.groups:
                (group / name).mkdir()
            self._set_limits(name)
        except OSError:
            self.remove(name)
            raise
        return name

    def procs_files(self, name: str) -> list[str]:
        """Where a pid must be written to put that process in group `name`: what another
        process (the one that forks the children) needs, without this object."""
        return [str(group / name / "cgroup.procs") for group in self.groups]

    def add(self, name: str, pid: int) -> None:
        for path in self.procs_files(name):
            Path(path).write_text(str(pid))

    def describe(self) -> dict:
        """What holds, JSON-friendly: {"cgroup": "v2", "memory_max_mb": 768, ...}."""
        return {"cgroup": self.version, **self.held}

    def sweep_orphans(self) -> None:
        """Remove groups left by services that are gone (named '<service pid>-<n>')."""
        for group in self.groups:
            for child in group.iterdir():
                owner = child.name.split("-", 1)[0]
                if child.is_dir() and owner.isdigit() and not _alive(int(owner)):
                    self.remove(child.name)

    def _set_limits(self, name: str) -> None:
        raise NotImplementedError

    def read_limits(self, name: str) -> dict:
        raise NotImplementedError

    def oom_killed(self, name: str) -> bool:
        raise NotImplementedError

    def remove(self, name: str) -> None:
        raise NotImplementedError


class _V1(Cgroups):
    version = "v1"

    @classmethod
    def setup(cls, limits: Limits, root: Path) -> _V1:
        memory, pids = root / "memory" / GROUP, root / "pids" / GROUP
        if not (root / "pids" / "cgroup.procs").is_file():
            raise Unavailable(f"cgroup v1 memory is mounted but pids is not ({root / 'pids'})")
        try:
            memory.mkdir(exist_ok=True)
            pids.mkdir(exist_ok=True)
        except OSError as exc:
            raise Unavailable(f"cannot make cgroup v1 groups under {root}: {exc.strerror} "
                              "(the sandbox needs root, and a writable /sys/fs/cgroup)") from None
        cpu = root / "cpu" / GROUP
        try:
            if not (root / "cpu" / "cpu.cfs_quota_us").is_file():
                return cls(limits, (memory, pids))
            cpu.mkdir(exist_ok=True)
        except OSError:
            return cls(limits, (memory, pids))  # memory and pids are what must hold
        return cls(limits, (memory, pids, cpu))

    def _set_limits(self, name: str) -> None:
        memory, pids = (group / name for group in self.groups[:2])
        if len(self.groups) > 2:
            cpu = self.groups[2] / name
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(CPU_PERIOD_US))
        limit = self.limits.memory_mb * MIB
        (memory / "memory.limit_in_bytes").write_text(str(limit))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (memory / "memory.memsw.limit_in_bytes").write_text(str(limit))
        (pids / "pids.max").write_text(str(self.limits.pids))

    def read_limits(self, name: str) -> dict:
        memory, pids = (group / name for group in self.groups[:2])
        cpus = None
        if len(self.groups) > 2:
            quota = _number((self.groups[2] / name / "cpu.cfs_quota_us").read_text())
            period = _number((self.groups[2] / name / "cpu.cfs_period_us").read_text())
            cpus = quota / period if quota and quota > 0 and period else None
        ram = int((memory / "memory.limit_in_bytes").read_text())
        ram_mb = ram // MIB if ram < V1_UNLIMITED else None
        swap_mb = None  # memsw bounds memory + swap; without it swap is not bounded
        with contextlib.suppress(OSError, ValueError):
            both = int((memory / "memory.memsw.limit_in_bytes").read_text())
            if both < V1_UNLIMITED and ram_mb is not None:
                swap_mb = (both - ram) // MIB
        return {"memory_max_mb": ram_mb, "swap_max_mb": swap_mb,
                "pids_max": _number((pids / "pids.max").read_text()), "cpus_max": cpus}

    def oom_killed(self, name: str) -> bool:
        counts = _counts(self.groups[0] / name / "memory.oom_control")
        return counts.get("oom_kill", 0) > 0

    def remove(self, name: str) -> None:
        # A group that still has a process stays (rmdir says EBUSY) and is swept once its
        # service is gone; the service has killed the child's pid namespace already.
        for group in self.groups:
            with contextlib.suppress(OSError):
                _rmdir(group / name)


class _V2(Cgroups):
    version = "v2"

    @classmethod
    def setup(cls, limits: Limits, root: Path, proc_cgroup: Path) -> _V2:
        """Delegate memory and pids from our own cgroup `base` down to `base/tutor-sandbox`.

        A cgroup that passes controllers to its children (cgroup.subtree_control) may hold
        no processes itself (the "no internal processes" rule), so we first move ourselves
        into the leaf `base/tutor-service`; then `base` and `base/tutor-sandbox` can both
        enable the controllers, and each child's group under tutor-sandbox gets the limits.
        """
        own = _own_cgroup(proc_cgroup)
        base = root / own.lstrip("/")
        if base.name == SERVICE_LEAF:  # moved there by an earlier `create` in this process
            base = base.parent
        if not (base / "cgroup.controllers").is_file():
            raise Unavailable(f"cgroup v2: our cgroup {own} is not under {root} (a container "
                              "without its own cgroup namespace? compose: `cgroup: private`)")
        available = (base / "cgroup.controllers").read_text().split()
        missing = [c for c in CONTROLLERS if c not in available]
        if missing:
            raise Unavailable(
                f"cgroup v2: {' and '.join(missing)} not delegated to {base} (its "
                f"cgroup.controllers: {' '.join(available) or 'none'}); run the sandbox "
                "service privileged with its own cgroup (compose: `cgroup: private`)")
        # The real root cgroup is exempt from the rule (and holds everyone): stay there.
        if (base / "cgroup.events").exists():
            others = [p for p in _pids(base / "cgroup.procs") if p != os.getpid()]
            if others:
                raise Unavailable(_busy(base, others))
            if _pids(base / "cgroup.procs"):
                (base / SERVICE_LEAF).mkdir(exist_ok=True)
                (base / SERVICE_LEAF / "cgroup.procs").write_text(str(os.getpid()))
        wanted = CONTROLLERS + (("cpu",) if "cpu" in available else ())
        enable = " ".join(f"+{c}" for c in wanted)
        _enable(base, enable)
        sandbox = base / GROUP
        sandbox.mkdir(exist_ok=True)
        _enable(sandbox, enable)
        return cls(limits, (sandbox,))

    def _set_limits(self, name: str) -> None:
        group = self.groups[0] / name
        (group / "memory.max").write_text(str(self.limits.memory_mb * MIB))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (group / "memory.swap.max").write_text("0")
        (group / "pids.max").write_text(str(self.limits.pids))
        with contextlib.suppress(OSError):  # no cpu controller delegated: no CPU cap
            (group / "cpu.max").write_text(f"{CPU_PERIOD_US} {CPU_PERIOD_US}")
        # One OOM kill takes the whole group: no half-dead child goes on with a verdict.
        with contextlib.suppress(OSError):  # kernels before 4.19
            (group / "memory.oom.group").write_text("1")

    def read_limits(self, name: str) -> dict:
        group = self.groups[0] / name
        swap = None
        with contextlib.suppress(OSError):
            swap = _number((group / "memory.swap.max").read_text())
        cpus = None
        with contextlib.suppress(OSError, ValueError):
            quota, period = (group / "cpu.max").read_text().split()
            cpus = int(quota) / int(period) if quota != "max" else None
        return {"memory_max_mb": _mib(_number((group / "memory.max").read_text())),
                "swap_max_mb": _mib(swap),
                "pids_max": _number((group / "pids.max").read_text()), "cpus_max": cpus}

    def oom_killed(self, name: str) -> bool:
        # `max` counts every time usage hit memory.max, including when reclaim (dropping
        # page cache) got under it again and the program went on: not a kill. `oom_kill`
        # is a process killed; `oom_group_kill` the whole group (memory.oom.group 1).
        counts = _counts(self.groups[0] / name / "memory.events")
        return counts.get("oom_kill", 0) > 0 or counts.get("oom_group_kill", 0) > 0

    def remove(self, name: str) -> None:
        group = self.groups[0] / name
        if not group.exists():
            return
        if _pids(group / "cgroup.procs"):
            try:
                (group / "cgroup.kill").write_text("1")  # since 5.14: the whole group
            except OSError:
                for pid in _pids(group / "cgroup.procs"):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        _wait_unpopulated(group, REMOVE_WAIT_S)
        with contextlib.suppress(OSError):  # still busy after the wait: swept later
            _rmdir(group)


# -- helpers -----------------------------------------------------------------------------

def _rmdir(path: Path) -> None:
    """rmdir of a cgroup (its interface files go with it); tests replace this to emulate
    cgroupfs on a plain directory tree."""
    os.rmdir(path)


def _own_cgroup(proc_cgroup: Path) -> str:
    for line in proc_cgroup.read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise Unavailable(f"no cgroup v2 entry (0::) in {proc_cgroup}")


def _enable(group: Path, controllers: str) -> None:
    """Write `+memory +pids` to the group's cgroup.subtree_control. EBUSY means a process
    sits in the group itself; right after we moved out, the kernel can still say so for a
    moment (crun retries the same way), so retry briefly before calling it someone's."""
    for attempt in range(20):
        try:
            (group / "cgroup.subtree_control").write_text(controllers)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise Unavailable(f"cgroup v2: cannot enable {controllers} in {group}: "
                                  f"{exc.strerror}") from None
            others = [p for p in _pids(group / "cgroup.procs") if p != os.getpid()]
            if others or attempt == 19:
                raise Unavailable(_busy(group, others)) from None
            time.sleep(0.01)


def _busy(group: Path, pids: list[int]) -> str:
    return (f"cgroup v2: {group} holds processes that are not the sandbox service's "
            f"({' '.join(map(str, pids)) or 'the kernel says busy'}), so it cannot delegate "
            "memory and pids (no internal processes rule); run the service alone in its "
            "cgroup: `tutor sandbox serve` as its own service (compose: `cgroup: private`, "
            "no `init: true`; systemd: Delegate=yes)")


def _wait_unpopulated(group: Path, timeout: float) -> None:
    """Until cgroup.events says `populated 0`: the kernel signals each change of that file
    to poll() as POLLPRI, so this wakes when the last process has gone."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.open(group / "cgroup.events", os.O_RDONLY)
    except OSError:
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLPRI)
        while True:
            os.lseek(fd, 0, os.SEEK_SET)
            events = os.read(fd, 4096).decode()
            if "populated 0" in events or "populated" not in events:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            poller.poll(min(left, 0.1) * 1000)  # re-read at least every 100 ms
    finally:
        os.close(fd)


def _pids(procs: Path) -> list[int]:
    try:
        return [int(line) for line in procs.read_text().split()]
    except OSError:
        return []


def _counts(path: Path) -> dict[str, int]:
    try:
        text = path.read_text()
    except OSError:
        return {}
    pairs = (line.split() for line in text.splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}


def _number(text: str) -> int | None:
    """A limit file's value: an int, or None for `max` (no limit)."""
    text = text.strip()
    return None if text == "max" else int(text)


def _mib(value: int | None) -> int | None:
    return None if value is None else value // MIB


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()
