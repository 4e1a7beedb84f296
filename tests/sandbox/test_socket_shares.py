"""Socket clients cannot lock the bots out (issue 37.4), through a real `tutor sandbox
serve` reached as attackers reach it: another user of the machine in the socket's group
(a process under its own uid), or a bot's own connection sending runs without a learner.

What the attacker gets is asserted from its side (the replies it reads), what the host
runs from /proc, and every test ends with another learner's correct answer judged.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading

import pytest
import pytest_asyncio

from bot.sandbox.client.client import SandboxBusy
from tests.helpers.paths import REPO
from tests.helpers.sandbox import in_syscall, jailed_processes, wait_until
from tests.helpers.served import Service, as_other_user, serving
from tests.helpers.train_loop import REFERENCE

pytestmark = pytest.mark.asyncio(loop_scope="module")
# Sleeping runs hold their slots for the whole test; they end when their connection does.
LIMITS = {"wall_s": 60.0, "cpu_s": 62, "memory_mb": 384, "data_mb": 192, "pids": 16}
SLEEPER = "import time\ntime.sleep(55)\n"
SLOTS = 8
USER_RUNS = SLOTS // 4  # Admission.user_max: what one user that is not a bot may hold

# The attacker's side: it sends its requests, then prints each reply it reads as a JSON
# line {"i": connection, "reply": ...} (or "closed"), until the test closes its stdin.
REPORTER = """
import json, select, socket, sys

def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s

def request(i, code, learner=None):
    body = {"id": i, "code": code}
    if learner:
        body["learner"] = learner
    return json.dumps(body).encode() + b"\\n"

def report(socks):
    index = {s: i for i, s in enumerate(socks)}
    buffers = {s: b"" for s in socks}
    while True:
        ready, _, _ = select.select([*buffers, sys.stdin], [], [])
        for r in ready:
            if r is sys.stdin:
                if not sys.stdin.readline():
                    return
                continue
            try:
                data = r.recv(1 << 16)
            except OSError:  # reset: the service closed it
                data = b""
            if not data:
                print(json.dumps({"i": index[r], "closed": True}), flush=True)
                del buffers[r]
                continue
            buffers[r] += data
            *lines, buffers[r] = buffers[r].split(b"\\n")
            for line in lines:
                print(json.dumps({"i": index[r], "reply": json.loads(line)}), flush=True)
"""
# One connection per run, each with one run without a learner.
HOLDER = REPORTER + """
path, n, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = [connect(path) for _ in range(n)]
for i, s in enumerate(socks):
    try:
        s.sendall(request(i, code))
    except OSError:  # closed by the service already (under load, before the send): report
        pass  # reads its end and says "closed"
report(socks)
"""
# One connection, n runs: without a learner, or each naming sys.argv[4].
FLOOD = REPORTER + """
path, n, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
learner = sys.argv[4] if len(sys.argv) > 4 else None
s = connect(path)
s.sendall(b"".join(request(i, code, learner) for i in range(n)))
report([s])
"""


class Attacker:
    """A user of the machine that runs no bot, and what it has read from the service."""

    def __init__(self, script: str, *args: str):
        self.process = as_other_user(script, *args)
        self.lines: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def replies(self) -> list[dict]:
        return [line["reply"] for line in self.lines if "reply" in line]

    def stop(self) -> None:
        self.process.stdin.close()  # it leaves: its connections close, its runs end
        self.process.wait(60)
        self._reader.join(10)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served():
    async with serving(None, "--parallel", str(SLOTS), limits=LIMITS,
                       shared_with_other_user=True) as service:
        yield service


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def quiet(served):
    """Each test starts once the runs of the one before are gone."""
    await wait_until(lambda: not sleeping(served), what="the last test's runs to end")


def sleeping(service: Service) -> int:
    return len([p for p in jailed_processes(service.process.pid)
                if in_syscall(p, "clock_nanosleep")])


async def judged_correct(service: Service, learner: str) -> None:
    """Another learner's correct answer, sent by a bot on a new connection, is judged."""
    client = service.client()
    await client.start()
    try:
        result = await client.run(REFERENCE, learner=learner, mode="check",
                                  checker="train_loop")
    finally:
        await client.stop()
    assert result.report is not None and result.report.passed is True, result


async def test_another_users_connections_cannot_keep_a_bot_out(served):
    bot = served.client()
    await bot.start()  # a bot's connection, idle when the attack comes
    attacker = Attacker(HOLDER, served.path, "64", SLEEPER)
    try:
        # 16 of its connections stay (its cap: at the cap its own idle ones made room, or a
        # new one was refused), each sends a sleeping run: 2 run (its share of the slots),
        # 14 are refused; the other 48 connections are closed.
        def seen() -> tuple[int, int, int]:
            closed = {line["i"] for line in attacker.lines if "closed" in line}
            refused = {line["i"] for line in attacker.lines if "reply" in line} - closed
            return len(closed), len(refused), sleeping(served)

        await wait_until(lambda: seen() == (48, 14, USER_RUNS), timeout_s=90,
                         what="48 connections closed, 14 runs refused and 2 running")
        assert all(reply["busy"] and reply["stderr"] in (
            "the sandbox has too many connections",
            f"You have {USER_RUNS} runs queued or running already; wait for their verdicts.")
            for reply in attacker.replies()), attacker.replies()
        # The bot kept its connection, a new one gets in, and learners are judged.
        await judged_correct(served, "honest-beside-64-connections")
        assert bot._restarts == 0
        assert (await bot.run("print('kept')", learner="kept")).stdout == "kept\n"
    finally:
        attacker.stop()
        await bot.stop()


async def test_runs_without_a_learner_on_one_connection_are_one_learner(served):
    attacker = Attacker(FLOOD, served.path, "128", SLEEPER)
    try:
        await wait_until(lambda: len(attacker.replies()) >= 127 and sleeping(served) >= 1,
                         timeout_s=120, what="127 refusals and one run")
        replies = attacker.replies()
        assert len({reply["id"] for reply in replies}) == 127
        assert all(reply["busy"] and "still running" in reply["stderr"] for reply in replies)
        assert sleeping(served) == 1
        await judged_correct(served, "honest-beside-128-runs")
    finally:
        attacker.stop()


async def test_a_bots_runs_without_a_learner_are_one_learner_too(served):
    bot = served.client()
    await bot.start()
    runs = [asyncio.ensure_future(bot.run(SLEEPER)) for _ in range(128)]
    try:
        await wait_until(lambda: sum(r.done() for r in runs) >= 127, timeout_s=120,
                         what="127 refusals")
        refused = [r for r in runs if r.done()]
        assert all(isinstance(r.exception(), SandboxBusy)
                   and "still running" in str(r.exception()) for r in refused)
        assert sleeping(served) == 1
        await judged_correct(served, "honest-beside-a-bots-128-runs")
    finally:
        await bot.stop()  # its connection closes: its run ends
        await asyncio.gather(*runs, return_exceptions=True)


async def test_a_learner_another_user_names_is_its_own(served):
    """Naming a bot's learner cannot hold that learner's place."""
    attacker = Attacker(FLOOD, served.path, "1", SLEEPER, "victim")
    try:
        await wait_until(lambda: sleeping(served) >= 1, what="the attacker's run")
        await judged_correct(served, "victim")
    finally:
        attacker.stop()


async def test_tutor_check_is_one_learner_per_os_user_whatever_user_says(served, tmp_path):
    asleep, awake = tmp_path / "asleep.py", tmp_path / "awake.py"
    asleep.write_text(SLEEPER)
    awake.write_text("print('awake')\n")

    def run(path, user: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "bot", "sandbox", "run", str(path), "--json"], cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "SANDBOX_ADDRESS": served.address,
                 "USER": user, "LOGNAME": user}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)

    first = run(asleep, "alice")
    try:
        await wait_until(lambda: sleeping(served) >= 1, what="the first command's run")
        second = await asyncio.to_thread(run(awake, "bob").communicate, timeout=120)
    finally:
        first.kill()
        first.wait(30)
    assert "still running" in second[1], second
