"""When a bot holds a pool to have no host: no report for three heartbeats (the newest of any
host's, or since the pool was first seen empty: a Redis that lost its data gets its hosts
back within a beat), and who joined or left, as the operator reads it."""

from __future__ import annotations

import json
import logging

from bot.sandbox.broker import Keys
from bot.sandbox.client.fleet_hosts import HostWatch

KEYS = Keys()


class Clock:
    ms = 1_000_000

    def now_ms(self) -> int:
        return self.ms


class Hashes:
    """What `hosts:{pool}` holds, as redis-py's HGETALL hands it back."""

    def __init__(self):
        self.cpu: dict[str, str] = {}

    def beat(self, name: str, seen_ms: int) -> None:
        self.cpu[name] = json.dumps({"seen_ms": seen_ms, "in_flight": 0})

    async def hgetall(self, key: str) -> dict[str, str]:
        return dict(self.cpu) if key == KEYS.hosts("cpu") else {}


async def test_an_empty_pool_gets_three_beats_from_when_it_was_first_seen():
    clock, redis = Clock(), Hashes()
    watch = HostWatch(KEYS, heartbeat_s=5.0, clock=clock)
    assert not watch.hostless("cpu")  # never looked
    await watch.look(redis)
    clock.ms += 14_000
    await watch.look(redis)
    assert not watch.hostless("cpu")
    clock.ms += 1_000
    assert watch.hostless("cpu")
    redis.beat("host-a", clock.ms)  # a host reports: the pool has one again
    await watch.look(redis)
    assert not watch.hostless("cpu") and set(watch.live["cpu"]) == {"host-a"}


async def test_the_newest_report_decides_and_a_data_loss_restarts_the_count(caplog):
    caplog.set_level(logging.INFO)
    clock, redis = Clock(), Hashes()
    watch = HostWatch(KEYS, heartbeat_s=5.0, clock=clock)
    redis.beat("host-a", clock.ms - 20_000)
    redis.beat("host-b", clock.ms - 1_000)
    await watch.look(redis)
    assert set(watch.live["cpu"]) == {"host-b"} and not watch.hostless("cpu")
    assert "host-b joined pool cpu (1 live)" in caplog.text
    clock.ms += 15_000  # host-b died a beat after its last report
    await watch.look(redis)
    assert watch.live["cpu"] == {} and watch.hostless("cpu")
    assert "host-b left pool cpu (0 live)" in caplog.text
    assert "no live sandbox host in pool cpu" in caplog.text
    redis.cpu.clear()  # Redis lost its data, the reports with it
    watch.data_lost()
    await watch.look(redis)
    assert not watch.hostless("cpu")
