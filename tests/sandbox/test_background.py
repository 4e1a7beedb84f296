"""The sandbox client's own event-loop thread (bot/sandbox/client/background.py): stopped,
it leaves no loop or socket for the garbage collector to warn of (an unclosed loop's
self-pipe failed an unrelated test when collected during it)."""

from __future__ import annotations

import gc
import warnings

from bot.sandbox.client.background import BackgroundSandbox


class StubClient:
    """Starts and stops at once, on the background loop."""

    def __init__(self):
        self.stopped = False

    async def start(self):
        return "info"

    async def stop(self):
        self.stopped = True


def _collected_warnings() -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_stopped_background_sandbox_closes_its_loop():
    background = BackgroundSandbox(StubClient())
    assert background.start(timeout_s=30) == "info"
    background.stop()
    assert background.client.stopped and background.loop.is_closed()
    never_started = BackgroundSandbox(StubClient())
    never_started.stop()
    assert never_started.loop.is_closed()
    del background, never_started
    assert not [w for w in _collected_warnings() if "event loop" in w or "socket" in w]
