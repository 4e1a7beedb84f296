"""The fleet's hosts as a bot process sees them: each pool's reports in `hosts:{pool}`, who
joined and who left (told to the operator), and whether a pool has gone without any host's
report for three heartbeats, when its runs are refused (and the waiting ones answered)
rather than left to wait for nothing. A pool whose reports are gone (a Redis that lost its
data, or a fresh one) gets those three beats from when it was first seen empty: its hosts
report again within one.
"""

from __future__ import annotations

import json
import logging

from bot.sandbox.broker import BEATS, POOLS, Clock, Keys, live_hosts

log = logging.getLogger("bot.sandbox.client.fleet")


class HostWatch:
    def __init__(self, keys: Keys, heartbeat_s: float, clock: Clock):
        self.keys, self.heartbeat_s, self.clock = keys, heartbeat_s, clock
        self.live: dict[str, dict[str, dict]] = {pool: {} for pool in POOLS}
        self._seen: dict[str, set[str]] = {}  # the live hosts of the last look, per pool
        self._last_beat: dict[str, int] = {}  # per pool, ms on Redis's clock (see module)
        self._empty_since: dict[str, int] = {}

    async def look(self, redis) -> dict[str, dict[str, dict]]:
        """{pool: {host: its last report}} of the hosts heard from within three beats."""
        now = self.clock.now_ms()
        for pool in POOLS:
            reports = await redis.hgetall(self.keys.hosts(pool))
            self.live[pool] = live_hosts(reports, now, self.heartbeat_s)[0]
            self._note_beat(pool, reports, now)
        self._note_hosts()
        return self.live

    def hostless(self, pool: str) -> bool:
        """Whether no host of the pool has reported for three beats."""
        last = self._last_beat.get(pool)
        return last is not None and (self.clock.now_ms() - last
                                     >= BEATS * self.heartbeat_s * 1000)

    def data_lost(self) -> None:
        """Redis lost its data, the hosts' reports with it: they get their beats anew."""
        self._last_beat.clear()
        self._empty_since.clear()

    def _note_beat(self, pool: str, reports: dict[str, str], now: int) -> None:
        beats = []
        for value in reports.values():
            try:
                beats.append(int(json.loads(value)["seen_ms"]))
            except (ValueError, TypeError, KeyError):
                continue
        if beats:
            self._empty_since.pop(pool, None)
            self._last_beat[pool] = max(beats)
        else:
            self._last_beat[pool] = self._empty_since.setdefault(pool, now)

    def _note_hosts(self) -> None:
        """Tell the operator which hosts joined or left each pool since the last look."""
        for pool, reports in self.live.items():
            now, before = set(reports), self._seen.get(pool, set())
            for name in sorted(now - before):
                log.info("sandbox host %s joined pool %s (%d live)", name, pool, len(now))
            for name in sorted(before - now):
                log.warning("sandbox host %s left pool %s (%d live)", name, pool, len(now))
            if before and not now:
                log.error("no live sandbox host in pool %s: its code answers are refused "
                          "once none has reported for %d heartbeats", pool, BEATS)
            self._seen[pool] = now
