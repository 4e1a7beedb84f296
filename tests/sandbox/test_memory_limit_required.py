"""Where no cgroup gives a memory limit, code is not run (one clear reason), unless the
operator opts in; and the bot then serves no code cards."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from bot.sandbox.protocol import OK, REFUSED
from tests.helpers.paths import REPO


def ask_worker(tmp_path, *flags: str) -> list[dict]:
    """An info request and one run, to a worker that finds no cgroupfs where it looks."""
    requests = [{"op": "info", "id": 1}, {"id": 2, "code": "print('ran')"}]
    done = subprocess.run(
        [sys.executable, "-m", "bot.sandbox.service", "--cgroup-root", str(tmp_path), *flags],
        input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True,
        text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=180)
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    return [replies[1], replies[2], done.stderr]


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker jails children: needs root")
def test_without_a_memory_limit_code_is_not_run(tmp_path):
    info, run, log = ask_worker(tmp_path)
    assert info["memory_limited"] is False and info["runs_code"] is False
    assert run["status"] == REFUSED and "no memory limit" in run["stderr"]
    assert "tutor sandbox doctor" in run["stderr"]
    assert log.count("no cgroup memory limit") == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker jails children: needs root")
def test_the_operator_can_opt_in_to_rlimits_only(tmp_path):
    info, run, _ = ask_worker(tmp_path, "--allow-unbounded-memory")
    assert info["runs_code"] is True and info["cgroups"] is None
    assert (run["status"], run["stdout"]) == (OK, "ran\n")


def test_the_bot_turns_code_cards_off_when_the_sandbox_runs_no_code(monkeypatch, caplog):
    from bot import app
    from bot.sandbox.client.client import SandboxClient
    from bot.sandbox.protocol import ServiceInfo

    async def unbounded_start(self):
        return ServiceInfo(runs_code=False, memory_limited=False)

    async def stop(self):
        return None

    monkeypatch.setattr(SandboxClient, "start", unbounded_start)
    monkeypatch.setattr(SandboxClient, "stop", stop)

    with caplog.at_level(logging.ERROR):
        assert app.start_sandbox() is None  # no judge: the engine serves no code card
    assert [r.message for r in caplog.records if "code cards are off" in r.message]
