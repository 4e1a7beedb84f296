"""`tutor sandbox doctor`: the checks run for real on this host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.sandbox.jail import doctor
from tests.helpers.paths import REPO

V1_MEMORY = Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")


def tutor_doctor(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    environment.pop("SANDBOX_ALLOW_UNBOUNDED_MEMORY", None)
    environment.update(env)
    return subprocess.run([sys.executable, "-m", "bot", "sandbox", "doctor", *args],
                          capture_output=True, text=True, env=environment, cwd=REPO,
                          timeout=60)


@pytest.mark.skipif(os.geteuid() != 0 or not V1_MEMORY.is_file(),
                    reason="this host's case: root with cgroup v1 memory and pids")
def test_doctor_on_this_host_reports_v1_limits_and_exits_0():
    result = tutor_doctor("--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0, report["problems"]
    assert report["bounded"] and report["problems"] == []
    assert report["cgroup"]["cgroup"] == "v1"
    assert report["cgroup"]["memory_max_mb"] == 768  # protocol.Limits' default
    assert report["cgroup"]["pids_max"] == 32
    assert report["cgroup"]["swap_max_mb"] == 0
    assert report["namespaces"] == {"ok": True, **{name: "ok" for name, _ in
                                                   doctor.NAMESPACES}}
    assert report["seccomp"] == {"ok": True}
    assert report["gpu"]["present"] == os.path.exists("/dev/nvidiactl")
    assert report["allow_unbounded_memory"] is False


def test_doctor_without_a_memory_limit_exits_1_and_says_what_to_do(tmp_path):
    """--cgroup-root points the cgroup check at an empty directory: no v1, no v2."""
    result = tutor_doctor("--json", "--cgroup-root", str(tmp_path))
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert not report["bounded"]
    assert report["cgroup"]["cgroup"] is None and report["cgroup"]["memory_max_mb"] is None
    memory = [p for p in report["problems"] if "no cgroup memory limit" in p]
    assert memory and "cgroup: private" in memory[0]
    assert "SANDBOX_ALLOW_UNBOUNDED_MEMORY=true" in memory[0]


def test_the_opt_in_is_reported_but_does_not_make_it_bounded(tmp_path):
    result = tutor_doctor("--cgroup-root", str(tmp_path), SANDBOX_ALLOW_UNBOUNDED_MEMORY="true")
    assert result.returncode == 1
    assert "[!!] cgroup: none usable" in result.stdout
    assert "SANDBOX_ALLOW_UNBOUNDED_MEMORY: true" in result.stdout
    assert "UNBOUNDED:" in result.stdout


def test_not_root_is_a_problem(tmp_path, monkeypatch):
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 1000)
    report = doctor.diagnose(tmp_path, allow_unbounded=False)
    assert not report["root"] and not report["bounded"]
    assert report["problems"][0].startswith("not root")
    assert "[!!] root: NO" in doctor.render(report)
