"""A sandbox client on an event-loop thread of its own, for synchronous callers (the
terminal, the engine's worker threads) and for a bot whose own loop must never wait on it.
"""

from __future__ import annotations

import asyncio
import threading
import time

from bot.sandbox.client import SandboxClient
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

    def start(self, timeout_s: float = 180.0) -> ServiceInfo:
        """Start (or reach) the service and return its `info` reply (kept in `self.info`)."""
        self._thread.start()
        self.info = asyncio.run_coroutine_threadsafe(self.client.start(),
                                                     self.loop).result(timeout_s)
        return self.info

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.client.stop(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
