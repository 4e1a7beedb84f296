"""A server's ranking kept for its visitors (bot/web/rankings.py): fresh for a while, then
shown while one read replaces it, and waited for only when too old or absent."""

from __future__ import annotations

import asyncio

import pytest

from bot.web.rankings import Rankings


class Reads:
    """A ranking read that the test lets finish: each read returns its own number."""

    def __init__(self):
        self.started, self.release = 0, asyncio.Event()

    async def __call__(self) -> list:
        self.started += 1
        number = self.started
        await self.release.wait()
        return [number]


async def _settled(rankings: Rankings, key) -> None:
    async with asyncio.timeout(30):
        while key in rankings._reading:
            await asyncio.sleep(0)


async def test_visitors_without_a_ranking_share_one_read():
    rankings, reads, ticks = Rankings(), Reads(), [0.0]
    rankings.monotonic = lambda: ticks[0]
    visitors = [asyncio.ensure_future(rankings.get("g", reads)) for _ in range(5)]
    await asyncio.sleep(0)
    reads.release.set()
    assert await asyncio.gather(*visitors) == [([1], 0.0)] * 5
    assert reads.started == 1


async def test_a_stale_ranking_is_shown_at_once_and_a_too_old_one_waited_for():
    rankings, reads, ticks = Rankings(fresh_s=30, stale_s=300), Reads(), [0.0]
    rankings.monotonic = lambda: ticks[0]
    reads.release.set()
    assert await rankings.get("g", reads) == ([1], 0.0)
    ticks[0] = 29.0
    assert await rankings.get("g", reads) == ([1], 29.0) and reads.started == 1
    reads.release.clear()
    ticks[0] = 200.0  # stale: no wait, one read starts for everyone after
    assert await rankings.get("g", reads) == ([1], 200.0)
    assert await rankings.get("g", reads) == ([1], 200.0)
    await asyncio.sleep(0)
    assert reads.started == 2  # one read for both
    reads.release.set()
    await _settled(rankings, "g")
    assert await rankings.get("g", reads) == ([2], 0.0)
    ticks[0] = 600.0  # too old to show: the visitor waits for the new one
    assert await rankings.get("g", reads) == ([3], 0.0)


async def test_a_failed_read_is_logged_and_the_next_visitor_reads_again(caplog):
    rankings, ticks = Rankings(), [0.0]
    rankings.monotonic = lambda: ticks[0]

    async def broken():
        raise RuntimeError("database gone")

    with pytest.raises(RuntimeError):
        await rankings.get("g", broken)
    assert "reading a server's ranking failed" in caplog.text

    async def fine():
        return ["ok"]

    assert await rankings.get("g", fine) == (["ok"], 0.0)
