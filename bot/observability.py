"""Structured logs, Prometheus metrics and a health endpoint for the running bot.

Metrics live in their own registry (tests and several bots in one process stay apart);
`/metrics` and `/healthz` are served on a local port only when METRICS_PORT is set.
With a sandbox fleet, its queue, hosts and takeovers are there too (`poll_fleet`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from bot.sandbox.protocol import UNJUDGED

REGISTRY = CollectorRegistry()
ANSWERS = Counter("tutor_answers_total", "Graded answers recorded",
                  ["kind", "correct"], registry=REGISTRY)
SANDBOX_SECONDS = Histogram("tutor_sandbox_seconds", "Code check latency through the sandbox",
                            buckets=(0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30),
                            registry=REGISTRY)
SANDBOX_VERDICTS = Counter("tutor_sandbox_verdicts_total", "Sandbox verdicts", ["status"],
                           registry=REGISTRY)
REMINDERS = Counter("tutor_reminders_total", "Reminders handled by the sweep", ["result"],
                    registry=REGISTRY)
GATEWAY_LATENCY = Gauge("tutor_gateway_latency_seconds", "Discord gateway heartbeat latency",
                        registry=REGISTRY)
LOOP_LAG = Histogram("tutor_event_loop_lag_seconds",
                     "How late a 10 ms timer on the bot's event loop woke",
                     buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
                     registry=REGISTRY)
LOOP_LAG_MAX = Gauge("tutor_event_loop_lag_max_seconds",
                     "The worst event-loop lag since the bot started", registry=REGISTRY)
SANDBOX_REFUSALS = Counter("tutor_sandbox_refusals", "Code runs the sandbox did not admit",
                           ["reason"], registry=REGISTRY)
SANDBOX_UNJUDGED = Counter("tutor_sandbox_unjudged",
                           "Code answers not judged through a fault of ours (no attempt used)",
                           ["cause"], registry=REGISTRY)
# Every label from the start: a series that appears only with its first event hides the
# change from zero from rate() and alerts.
for _reason in ("learner", "rate", "full", "unreachable", "no_host", "busy"):
    SANDBOX_REFUSALS.labels(reason=_reason)
for _cause in UNJUDGED:
    SANDBOX_UNJUDGED.labels(cause=_cause)
LAG_TICK_S = 0.01
FLEET_POLL_S = 3.0  # how often the sandbox's loop asks Redis for the fleet's numbers
FLEET_STALE_S = 60.0  # a look older than this (a poll stuck on Redis) is itself a problem

log = logging.getLogger(__name__)


async def watch_loop_lag() -> None:
    """Measure how late the event loop runs a short timer: work that blocks the loop (a
    slow database call, say) delays every other learner's click by as much."""
    loop = asyncio.get_running_loop()
    worst = 0.0
    while True:
        start = loop.time()
        await asyncio.sleep(LAG_TICK_S)
        lag = max(0.0, loop.time() - start - LAG_TICK_S)
        LOOP_LAG.observe(lag)
        if lag > worst:
            worst = lag
            LOOP_LAG_MAX.set(worst)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the exception if any."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
                 "level": record.levelname, "logger": record.name,
                 "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


@functools.cache
def _answers(kind: str, correct: bool):
    return ANSWERS.labels(kind=kind, correct=str(correct).lower())


def record_answer(kind: str, correct: bool) -> None:
    _answers(kind, correct).inc()  # the labelled child, looked up once (answer hot path)


def record_sandbox(status: str, seconds: float) -> None:
    SANDBOX_VERDICTS.labels(status=status).inc()
    SANDBOX_SECONDS.observe(seconds)


def record_refusal(reason: str) -> None:
    SANDBOX_REFUSALS.labels(reason=reason).inc()


def record_unjudged(cause: str) -> None:
    SANDBOX_UNJUDGED.labels(cause=cause).inc()


class FleetCollector:
    """The sandbox fleet's numbers at scrape time, from the last look `poll_fleet` took:
    a scrape never waits on Redis. No fleet: no fleet metrics. Redis away: the broker is
    down, no runs and no live hosts (zeros, not gaps), and the takeovers last counted."""

    def __init__(self):
        self.snapshot = None  # a FleetStats, replaced whole on the sandbox loop's thread
        self.taken_at = 0.0  # time.monotonic() of that look

    def update(self, stats) -> None:
        self.snapshot, self.taken_at = stats, time.monotonic()

    def describe(self):
        return self._families()

    def collect(self):
        return self._families(self.snapshot) if self.snapshot is not None else []

    def health(self) -> dict | None:
        """The fleet for /healthz (None without one): Redis, live hosts per pool, and why
        it is degraded, if it is (`reasons`)."""
        stats = self.snapshot
        if stats is None:
            return None
        age = time.monotonic() - self.taken_at
        reasons = []
        if not stats.up:
            reasons.append(f"redis: {stats.problem or 'unreachable'}")
        elif stats.hostless.get("cpu"):
            reasons.append("no sandbox host in pool cpu has reported for three heartbeats: "
                           "code answers are refused")
        if age > FLEET_STALE_S:
            reasons.append(f"no look at the fleet for {age:.0f} s")
        return {"redis": "reachable" if stats.up else "unreachable",
                "hosts": dict(sorted(stats.live.items())),
                "queue": dict(sorted(stats.queue.items())), "reasons": reasons}

    @staticmethod
    def _families(stats=None):
        up = GaugeMetricFamily("tutor_sandbox_broker_up",
                               "1 while the fleet's Redis answers this bot, else 0")
        live = GaugeMetricFamily("tutor_sandbox_live_hosts",
                                 "Sandbox hosts heard from lately, per device pool",
                                 labels=["pool"])
        queue = GaugeMetricFamily("tutor_sandbox_queue_depth",
                                  "Runs waiting or running in the fleet, per device pool",
                                  labels=["pool"])
        in_flight = GaugeMetricFamily("tutor_sandbox_host_in_flight",
                                      "Runs in hand on each live sandbox host",
                                      labels=["pool", "host"])
        reclaims = CounterMetricFamily("tutor_sandbox_reclaims",
                                       "Runs taken over from a silent host, fleet-wide",
                                       labels=["pool"])
        if stats is not None:
            up.add_metric([], 1 if stats.up else 0)
            for pool, count in sorted(stats.live.items()):
                live.add_metric([pool], count)
            for pool, depth in sorted(stats.queue.items()):
                queue.add_metric([pool], depth)
            for (pool, host), runs in sorted(stats.in_flight.items()):
                in_flight.add_metric([pool, host], runs)
            for pool, total in sorted(stats.reclaims.items()):
                reclaims.add_metric([pool], total)
        return [up, live, queue, in_flight, reclaims]


FLEET = FleetCollector()
REGISTRY.register(FLEET)


@runtime_checkable
class FleetLook(Protocol):
    """A sandbox client with a fleet to look at (a FleetClient): its queue and hosts."""

    async def stats(self): ...


async def poll_fleet(client: FleetLook) -> None:
    """Keep `FLEET` fresh from `client.stats()` (a FleetClient's, which never raises: Redis
    away is a look that says so), on the sandbox's own loop."""
    me = asyncio.current_task()
    try:
        # A cancellation that lands inside the Redis client can come back as a connection
        # error, which the look survives: the task's own count says it was cancelled.
        while not me.cancelling():
            try:
                FLEET.update(await client.stats())
            except Exception:  # noqa: BLE001 - a poller that died would stay silent
                log.exception("no look at the sandbox fleet")
            await asyncio.sleep(FLEET_POLL_S)
    finally:
        FLEET.snapshot = None


def record_reminders(report) -> None:
    for result in ("sent", "via_channel", "unreachable", "nothing_due", "too_late", "failed"):
        if count := getattr(report, result):
            REMINDERS.labels(result=result).inc(count)


class HealthServer:
    """`/healthz` and `/metrics` on a local port. Health is 503 ("unhealthy") when the
    gateway is not connected or the database does not answer: the bot serves nobody, and
    a restart may help. With a sandbox fleet whose Redis is away or whose cpu pool has no
    live host, it stays 200 but says "degraded", with the reasons: the bot serves every
    card but code answers (which are refused, costing no attempt), and restarting the bot
    would not bring Redis or a host back. Alert on `status` or on the fleet's metrics."""

    def __init__(self, checks: dict[str, Callable[[], bool]],
                 latency: Callable[[], float] | None = None):
        self.checks, self.latency = checks, latency
        self.started = time.monotonic()
        self._runner: web.AppRunner | None = None
        self._lag: asyncio.Task | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/metrics", self.metrics)
        return app

    async def healthz(self, request: web.Request) -> web.Response:
        results = {}
        for name, check in self.checks.items():
            try:
                results[name] = bool(check())
            except Exception:  # noqa: BLE001 - a failing check is an unhealthy answer
                results[name] = False
        healthy = all(results.values())
        fleet = FLEET.health()
        status = "unhealthy" if not healthy else (
            "degraded" if fleet and fleet["reasons"] else "ok")
        body = {"status": status, "checks": results,
                "uptime_s": round(time.monotonic() - self.started, 1)}
        if fleet is not None:
            body["fleet"] = fleet
        return web.json_response(body, status=200 if healthy else 503)

    async def metrics(self, request: web.Request) -> web.Response:
        if self.latency is not None:
            latency = self.latency()
            if latency == latency and latency != float("inf"):  # NaN/inf before READY
                GATEWAY_LATENCY.set(latency)
        return web.Response(body=generate_latest(REGISTRY),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, host: str, port: int) -> None:
        self._runner = web.AppRunner(self.app())
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        self._lag = asyncio.create_task(watch_loop_lag())

    async def stop(self) -> None:
        if self._lag:
            self._lag.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._lag
        if self._runner:
            await self._runner.cleanup()
