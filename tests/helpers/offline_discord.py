"""A bot process run against the offline Discord (`bot/bench/offline_discord/`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

from bot.bench.offline_discord import InteractionRecord, OfflineDiscord
from tests.helpers.paths import REPO

__all__ = ["STARTUP_S", "STOP_S", "BotProcess", "InteractionRecord", "OfflineDiscord",
           "free_port", "launch_tutor", "wait_for_log"]

# Bounds for a hung bot only: the waits end as soon as the bot is up, or gone. A cold start
# (imports, the sandbox's torch) took over 20 s on the 2-core CI box with another suite
# running; a stop takes a few seconds there.
STARTUP_S = 120
STOP_S = 120


class BotProcess:
    """A bot running in its own process against the offline Discord."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path):
        self.proc, self.log = proc, log

    async def stop(self, sig: signal.Signals = signal.SIGINT) -> int:
        """`sig` (Ctrl-C, or SIGTERM as docker stop sends), then a wait until the process
        exits: it closes the websocket (code 1000) and returns. The wait ends as soon as it
        does; STOP_S only bounds a hung process, which is then killed (-9: the test fails).
        A process already gone keeps its own exit code."""
        if self.proc.returncode is not None:
            return self.proc.returncode
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), STOP_S)
        if self.proc.returncode is None:
            self.proc.kill()
        return await self.proc.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def launch_tutor(server: OfflineDiscord, tmp_path, db_url: str,
                       metrics_port: int) -> BotProcess:
    """`tutor run` (python -m bot run) in its own process, logging to tmp_path/tutor.log."""
    log = tmp_path / "tutor.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCORD_")}
    env.update(DISCORD_TOKEN="offline-token", DISCORD_API_BASE_URL=server.api_base,
               DISCORD_GATEWAY_URL=server.gateway_url, DATABASE_URL=db_url,
               PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", LOG_LEVEL="INFO",
               METRICS_PORT=str(metrics_port))
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "run", cwd=tmp_path, env=env, stdout=out,
            stderr=asyncio.subprocess.STDOUT)
    return BotProcess(proc, log)


async def wait_for_log(bot: BotProcess, text: str, timeout: float = 90.0) -> str:
    """The bot's log once it contains `text` (a condition, bounded only for a hung bot)."""
    async with asyncio.timeout(timeout):
        while text not in (log := bot.log.read_text()):
            await asyncio.sleep(0.05)
    return log
