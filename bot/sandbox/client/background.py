"""A sandbox client on an event-loop thread of its own, for synchronous callers (the
terminal, the engine's worker threads) and for a bot whose own loop must never wait on it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine

from bot.sandbox.client.client import SandboxClient
from bot.sandbox.protocol import ServiceInfo

_real_monotonic = time.monotonic  # as imported: see _RealTimeLoop


class _RealTimeLoop(asyncio.SelectorEventLoop):
    """The sandbox's deadlines are about real processes: they keep real time even when the
    bot's own loop runs on a virtual clock (SimCord patches time.monotonic in tests)."""

    def time(self) -> float:
        return _real_monotonic()


class BackgroundSandbox:
    """A sandbox client on its own event-loop thread: `client` runs on `loop`."""

    def __init__(self, client: SandboxClient | None = None):
        self.client = client or SandboxClient()
        self.loop = _RealTimeLoop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="sandbox-loop")
        self.info: ServiceInfo | None = None
        self._tasks: set[asyncio.Task] = set()

    def start(self, timeout_s: float = 180.0) -> ServiceInfo:
        """Start (or reach) the service and return its `info` reply (kept in `self.info`)."""
        self._thread.start()
        self.info = asyncio.run_coroutine_threadsafe(self.client.start(),
                                                     self.loop).result(timeout_s)
        return self.info

    def keep_running(self, coroutine: Coroutine) -> None:
        """Run `coroutine` on the sandbox's loop (beside the client) until `stop()`."""
        async def spawn() -> None:
            self._tasks.add(asyncio.create_task(coroutine))

        asyncio.run_coroutine_threadsafe(spawn(), self.loop).result(5)

    async def _stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.client.stop()

    def stop(self) -> None:
        """Stop the client and its loop, then close the loop (its self-pipe's sockets
        would otherwise be left to the garbage collector, which warns of them)."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
        if not self._thread.is_alive() and not self.loop.is_closed():
            self.loop.close()
