"""bot.sandbox.jail.cgroups: v2 against a fake cgroupfs tree, v1 for real where the host has it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.sandbox.jail import cgroups
from bot.sandbox.jail.cgroups import Cgroups
from bot.sandbox.protocol import Limits

LIMITS = Limits(memory_mb=256, pids=12)
DEAD_PID = 4_194_305  # above the kernel's pid_max limit: never a live process


# -- a fake cgroup v2 tree ---------------------------------------------------------------

def _fake_rmdir(path: Path) -> None:
    """cgroupfs: rmdir takes the interface files with it, but not a populated group."""
    procs = path / "cgroup.procs"
    if procs.exists() and procs.read_text().split():
        raise OSError(16, "Device or resource busy")
    shutil.rmtree(path)


@pytest.fixture
def v2(tmp_path, monkeypatch):
    """/sys/fs/cgroup of a container with its own cgroup namespace: we are in `/service`,
    with memory and pids available, alone in the cgroup."""
    monkeypatch.setattr(cgroups, "_rmdir", _fake_rmdir)
    root = tmp_path / "cgroup"
    base = root / "service"
    base.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    (base / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (base / "cgroup.subtree_control").write_text("")
    (base / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    (base / "cgroup.procs").write_text(f"{os.getpid()}\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/service\n")
    return root, base, proc


def test_v2_delegates_memory_pids_and_cpu_and_moves_us_into_a_leaf(v2):
    root, base, proc = v2
    found = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    assert found is not None and found.version == "v2", cgroups.last_problem
    assert cgroups.last_problem is None
    assert (base / "tutor-service" / "cgroup.procs").read_text() == str(os.getpid())
    assert (base / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (base / "tutor-sandbox" / "cgroup.subtree_control").read_text() == \
        "+memory +pids +cpu"
    assert found.describe() == {"cgroup": "v2", "memory_max_mb": 256, "swap_max_mb": 0,
                                "pids_max": 12, "cpus_max": 1.0}
    assert list((base / "tutor-sandbox").iterdir()) == [  # the probe group is gone
        base / "tutor-sandbox" / "cgroup.subtree_control"]


def test_v2_child_group_gets_the_limits_and_the_procs_path(v2):
    root, base, proc = v2
    found = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    name = found.new()
    group = base / "tutor-sandbox" / name
    assert name.startswith(f"{os.getpid()}-")
    assert (group / "memory.max").read_text() == str(256 << 20)
    assert (group / "memory.swap.max").read_text() == "0"
    assert (group / "pids.max").read_text() == "12"
    assert (group / "memory.oom.group").read_text() == "1"
    assert (group / "cpu.max").read_text() == "100000 100000"  # one CPU's worth
    assert found.procs_files(name) == [str(group / "cgroup.procs")]
    found.add(name, 4242)
    assert (group / "cgroup.procs").read_text() == "4242"
    assert found.read_limits(name) == {"memory_max_mb": 256, "swap_max_mb": 0, "pids_max": 12,
                                       "cpus_max": 1.0}


def test_v2_oom_killed_reads_memory_events(v2):
    root, base, proc = v2
    found = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    events = base / "tutor-sandbox" / found.new() / "memory.events"
    name = events.parent.name
    assert not found.oom_killed(name)  # no memory.events yet
    events.write_text("low 0\nhigh 0\nmax 57\noom 0\noom_kill 0\noom_group_kill 0\n")
    assert not found.oom_killed(name)  # hit the limit, reclaim got it back under: no kill
    events.write_text("low 0\nhigh 0\nmax 90\noom 1\noom_kill 1\noom_group_kill 0\n")
    assert found.oom_killed(name)
    events.write_text("low 0\nhigh 0\nmax 90\noom 1\noom_kill 0\noom_group_kill 1\n")
    assert found.oom_killed(name)


def test_v2_remove_kills_what_is_left_then_removes_the_group(v2, monkeypatch):
    root, base, proc = v2
    found = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    name = found.new()
    group = base / "tutor-sandbox" / name
    (group / "cgroup.procs").write_text("4242\n")
    (group / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    (group / "cgroup.kill").write_text("")
    real_write = Path.write_text

    def kernel(path: Path, text: str, *args, **kwargs):
        """Writing 1 to cgroup.kill empties the group, as the kernel would."""
        result = real_write(path, text, *args, **kwargs)
        if path.name == "cgroup.kill" and text == "1":
            real_write(path.parent / "cgroup.procs", "")
            real_write(path.parent / "cgroup.events", "populated 0\nfrozen 0\n")
        return result

    monkeypatch.setattr(Path, "write_text", kernel)
    found.remove(name)
    assert not group.exists()
    found.remove(name)  # gone already: nothing to do, no error


def test_v2_sweeps_groups_of_dead_workers_only(v2):
    root, base, proc = v2
    sandbox = base / "tutor-sandbox"
    for name in (f"{DEAD_PID}-0", f"{DEAD_PID}-3", f"{os.getppid()}-1", "not-a-worker"):
        (sandbox / name).mkdir(parents=True)
        (sandbox / name / "memory.max").write_text("1")
    found = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    assert found is not None
    assert sorted(p.name for p in sandbox.iterdir() if p.is_dir()) == [
        f"{os.getppid()}-1", "not-a-worker"]


def test_v2_create_twice_in_one_process_reuses_the_delegation(v2):
    root, base, proc = v2
    assert Cgroups.create(LIMITS, root=root, proc_cgroup=proc) is not None
    proc.write_text("0::/service/tutor-service\n")  # where the first create moved us
    (base / "cgroup.procs").write_text("")
    again = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    assert again is not None and again.groups == (base / "tutor-sandbox",)
    assert not (base / "tutor-service" / "tutor-service").exists()


def test_v2_refuses_when_a_foreign_process_stays_in_our_cgroup(v2):
    root, base, proc = v2
    (base / "cgroup.procs").write_text(f"{os.getpid()}\n1\n")  # e.g. an init in front of us
    assert Cgroups.create(LIMITS, root=root, proc_cgroup=proc) is None
    assert "not the sandbox service's (1)" in cgroups.last_problem
    assert "no internal processes" in cgroups.last_problem
    assert (base / "cgroup.subtree_control").read_text() == ""  # nothing enabled
    assert not (base / "tutor-service").exists()  # and we stayed where we were


def test_v2_refuses_when_the_kernel_says_busy(v2, monkeypatch):
    root, base, proc = v2
    real_write = Path.write_text

    def busy(path: Path, text: str, *args, **kwargs):
        if path.name == "cgroup.subtree_control" and text:
            raise OSError(16, "Device or resource busy")
        return real_write(path, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", busy)
    monkeypatch.setattr(cgroups.time, "sleep", lambda _: None)  # the brief EBUSY retries
    assert Cgroups.create(LIMITS, root=root, proc_cgroup=proc) is None
    assert "cannot delegate memory and pids" in cgroups.last_problem


def test_v2_refuses_when_controllers_are_not_delegated(v2):
    root, base, proc = v2
    (base / "cgroup.controllers").write_text("cpu io\n")
    assert Cgroups.create(LIMITS, root=root, proc_cgroup=proc) is None
    assert "memory and pids not delegated" in cgroups.last_problem


def test_v2_refuses_when_our_cgroup_is_not_in_the_tree(v2):
    root, base, proc = v2
    proc.write_text("0::/docker/0123abcd\n")  # the host's path: no cgroup namespace
    assert Cgroups.create(LIMITS, root=root, proc_cgroup=proc) is None
    assert "cgroup: private" in cgroups.last_problem


def test_v2_in_the_real_root_cgroup_stays_put(v2):
    """The root cgroup is exempt from the no-internal-processes rule (and has no
    cgroup.events): other processes there are no obstacle, and we do not move."""
    root, base, proc = v2
    (root / "cgroup.procs").write_text("1\n2\n3\n")
    (root / "cgroup.subtree_control").write_text("")
    proc.write_text("0::/\n")
    found = Cgroups.create(LIMITS, root=root, proc_cgroup=proc)
    assert found is not None and found.groups == (root / "tutor-sandbox",)
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert not (root / "tutor-service").exists()


def test_neither_version_says_why(tmp_path):
    assert Cgroups.create(LIMITS, root=tmp_path) is None
    assert "neither a cgroup v1 memory controller nor a cgroup v2" in cgroups.last_problem


# -- cgroup v1, for real -----------------------------------------------------------------

V1_ROOT = Path("/sys/fs/cgroup")
v1_host = pytest.mark.skipif(
    os.geteuid() != 0 or not (V1_ROOT / "memory" / "memory.limit_in_bytes").is_file(),
    reason="needs root and a cgroup v1 memory controller at /sys/fs/cgroup/memory")


@v1_host
def test_v1_group_gets_the_limits_and_a_process_lands_in_it():
    found = Cgroups.create(LIMITS)
    assert found is not None and found.version == "v1", cgroups.last_problem
    has_cpu = (V1_ROOT / "cpu" / "cpu.cfs_quota_us").is_file()
    assert found.describe() == {"cgroup": "v1", "memory_max_mb": 256, "swap_max_mb": 0,
                                "pids_max": 12, "cpus_max": 1.0 if has_cpu else None}
    name = found.new()
    memory = V1_ROOT / "memory" / "tutor-sandbox" / name
    assert int((memory / "memory.limit_in_bytes").read_text()) == 256 << 20
    assert (V1_ROOT / "pids" / "tutor-sandbox" / name / "pids.max").read_text().strip() == "12"
    cpu = [str(V1_ROOT / "cpu" / "tutor-sandbox" / name / "cgroup.procs")] if has_cpu else []
    assert found.procs_files(name) == [str(memory / "cgroup.procs"),
                                       str(V1_ROOT / "pids" / "tutor-sandbox" / name /
                                           "cgroup.procs"), *cpu]
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:  # waits until placed, then exits
        os.close(go_w)
        os.read(go_r, 1)
        os._exit(0)
    os.close(go_r)
    try:
        for path in found.procs_files(name):  # what another process would do
            Path(path).write_text(str(child))
        mine = Path(f"/proc/{child}/cgroup").read_text()
        assert f"memory:/tutor-sandbox/{name}\n" in mine
        assert f"pids:/tutor-sandbox/{name}\n" in mine
        assert not found.oom_killed(name)
    finally:
        os.write(go_w, b"x")
        os.close(go_w)
        os.waitpid(child, 0)
    found.remove(name)
    assert not memory.exists()
    assert not (V1_ROOT / "pids" / "tutor-sandbox" / name).exists()


@v1_host
def test_v1_sweeps_groups_of_dead_workers():
    orphan = f"{DEAD_PID}-0"
    for controller in ("memory", "pids"):
        (V1_ROOT / controller / "tutor-sandbox" / orphan).mkdir(parents=True, exist_ok=True)
    assert Cgroups.create(LIMITS) is not None
    for controller in ("memory", "pids"):
        assert not (V1_ROOT / controller / "tutor-sandbox" / orphan).exists()


# -- cgroup v2 core files, for real --------------------------------------------------------

UNIFIED = Path("/sys/fs/cgroup/unified")  # this host's cgroup2 (no memory controller in it)


@pytest.mark.skipif(os.geteuid() != 0 or not (UNIFIED / "cgroup.procs").is_file(),
                    reason="needs root and a cgroup2 hierarchy at /sys/fs/cgroup/unified")
def test_v2_remove_kills_a_populated_group_and_waits_for_it_for_real():
    """cgroup.kill, cgroup.events and rmdir need no controller: the kernel's own v2 tree
    checks the kill-then-wait path even where memory is on v1."""
    top = UNIFIED / f"tutor-test-{os.getpid()}"
    top.mkdir()
    shell = None
    try:
        found = cgroups._V2(LIMITS, (top,))
        (top / "run").mkdir()
        shell = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"])
        found.add("run", shell.pid)
        found.add("run", shell.pid)  # idempotent
        assert "populated 1" in (top / "run" / "cgroup.events").read_text()
        found.remove("run")  # the shell and both sleeps are killed; the group goes
        assert not (top / "run").exists()
        assert shell.wait(timeout=10) == -9
    finally:
        if shell and shell.poll() is None:
            shell.kill()
            shell.wait()
        for group in (top / "run", top):
            if group.exists():
                group.rmdir()
