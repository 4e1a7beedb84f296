"""`tutor sandbox run` and `tutor check` when the sandbox is not there for them: one line
that says what to check, exit 2, never a traceback (a real Redis, the real command)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bot.bench.local_redis import LocalRedis
from bot.sandbox.broker import BOT_USER
from tests.helpers.paths import REPO


@pytest.fixture(scope="module")
def redis():
    with LocalRedis() as server:
        yield server


def tutor(*args: str, address: str, tmp_path) -> subprocess.CompletedProcess:
    code = tmp_path / "loop.py"
    code.write_text("print('hello')\n")
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
                   "HOME": str(tmp_path), "SANDBOX_ADDRESS": address}
    return subprocess.run([sys.executable, "-m", "bot", *args, str(code)], cwd=tmp_path,
                          env=environment, capture_output=True, text=True, timeout=120)


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("command", [["sandbox", "run"],
                                     ["check", "gradient-accumulation/train-loop"]])
def test_a_wrong_password_is_one_line(redis, tmp_path, command):
    line = one_line(tutor(*command, address=redis.url(BOT_USER, "wrong"), tmp_path=tmp_path))
    assert line.startswith("tutor: the sandbox cannot be reached: Redis refused user "
                           "tutor-bot")
    assert "wrong" not in line.replace("WRONGPASS", "")  # never the password


def test_no_redis_is_one_line(tmp_path):
    gone = LocalRedis()  # a port nobody listens on
    line = one_line(tutor("sandbox", "run", address=gone.bot_url, tmp_path=tmp_path))
    assert line.startswith("tutor: the sandbox cannot be reached: cannot reach Redis")
    assert gone.bot_password not in line


def test_no_host_is_one_line(redis, tmp_path):
    # The command's client waits three heartbeats (15 s) for a host to report, then says so.
    line = one_line(tutor("sandbox", "run", address=redis.bot_url, tmp_path=tmp_path))
    assert line == ("tutor: the code was not judged: no code runner is up right now (no "
                    "sandbox host has reported for 15 s)")


def test_no_socket_is_one_line(tmp_path):
    result = tutor("sandbox", "run", address=f"unix:{tmp_path}/nothing.sock",
                   tmp_path=tmp_path)
    assert one_line(result).startswith("tutor: the sandbox cannot be reached at unix:")
