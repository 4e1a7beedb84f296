"""Servers' rankings, read once and shown to every visitor for a while (`Site.board`).

A big server's season ranking is an aggregate over its whole log (a million rows: most of
a second). A ranking is fresh for `fresh_s`; after that, up to `stale_s`, a visitor is
shown it at once while one read in the background replaces it, so no visitor waits on the
log but the first after a quiet spell. Visitors who find no usable ranking share one read."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

FRESH_S = 30.0
STALE_S = 300.0
log = logging.getLogger(__name__)


@dataclass
class Rankings:
    fresh_s: float = FRESH_S
    stale_s: float = STALE_S
    monotonic: Callable[[], float] = time.monotonic
    _kept: dict = field(default_factory=dict, repr=False)  # key: (read at, ranking)
    _reading: dict = field(default_factory=dict, repr=False)  # key: its read in flight

    async def get(self, key: Hashable, read: Callable[[], Awaitable[list]]) -> tuple[list, float]:
        """The ranking under `key` and its age in seconds, read with `read` when it has
        none younger than `stale_s`; a ranking older than `fresh_s` is read again."""
        kept = self._kept.get(key)
        age = None if kept is None else self.monotonic() - kept[0]
        if age is not None and age < self.fresh_s:
            return kept[1], age
        reading = self._reading.get(key)
        if reading is None:
            reading = self._reading[key] = asyncio.ensure_future(self._read(key, read))
            reading.add_done_callback(_log_failure)
        if age is not None and age < self.stale_s:
            return kept[1], age
        return await asyncio.shield(reading), 0.0

    async def _read(self, key: Hashable, read: Callable[[], Awaitable[list]]) -> list:
        try:
            ranking = await read()
        finally:
            del self._reading[key]
        now = self.monotonic()
        self._kept = {k: v for k, v in self._kept.items() if now - v[0] < self.stale_s}
        self._kept[key] = (now, ranking)
        return ranking


def _log_failure(reading: asyncio.Future) -> None:
    """A read that failed: the visitor who waited on it sees our error page; one in the
    background would go unheard (and the stale ranking keeps being shown until it ages)."""
    if not reading.cancelled() and reading.exception() is not None:
        log.error("reading a server's ranking failed", exc_info=reading.exception())
