"""A bot process run against the offline Discord (`bot/bench/offline_discord/`)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from bot.bench.offline_discord import InteractionRecord, OfflineDiscord

__all__ = ["BotProcess", "InteractionRecord", "OfflineDiscord"]


class BotProcess:
    """A bot running in its own process against the offline Discord."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path):
        self.proc, self.log = proc, log

    async def stop(self, timeout: float = 30.0) -> int:
        """Ctrl-C, waiting until the process exits: Client.run closes the websocket (code
        1000) and returns. The wait ends as soon as it does; `timeout` only bounds a hung
        process on a busy machine. A second SIGINT covers Python 3.11's asyncio.wait_for
        swallowing the first one's cancellation if it lands just as discord.py's connect
        step finishes; SIGKILL is the last resort."""
        for sig in (signal.SIGINT, signal.SIGINT, signal.SIGKILL):
            if self.proc.returncode is not None:
                break
            self.proc.send_signal(sig)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                pass
        return await self.proc.wait()
