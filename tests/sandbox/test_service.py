"""`tutor sandbox serve`: one service that several bot processes share over a socket."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from bot.sandbox.client.client import SandboxClient
from bot.sandbox.protocol import OK
from tests.helpers.paths import REPO

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def test_there_is_no_unauthenticated_tcp_listener():
    served = subprocess.run([sys.executable, "-m", "bot", "sandbox", "serve", "--listen",
                             "tcp:127.0.0.1:7777"], cwd=REPO, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert served.returncode != 0
    assert "--broker" in served.stderr  # it says what to use across machines


async def test_two_clients_share_one_served_service(tmp_path):
    socket_path = tmp_path / "sandbox.sock"
    address = f"unix:{socket_path}"
    service = subprocess.Popen([sys.executable, "-m", "bot", "sandbox", "serve", "--listen",
                                address], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                               stderr=subprocess.DEVNULL)
    try:
        clients = [SandboxClient(address=address) for _ in range(2)]
        for client in clients:  # start() waits for the service to come up
            assert (await client.start()).pid == service.pid  # shared, not their own
        assert oct(socket_path.stat().st_mode & 0o777) == "0o660"
        results = await asyncio.gather(*(c.run(f"print({i} * 2)", learner=f"l{i}")
                                         for i, c in enumerate(clients)))
        assert [(r.status, r.stdout) for r in results] == [(OK, "0\n"), (OK, "2\n")]
        for client in clients:
            await client.stop()
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=10)
