"""The world `tutor bench faults` breaks: a real fleet on loopback and the bot's side of it.

A throwaway `redis-server` (append-only, the generated ACL file), sandbox hosts as
`tutor sandbox serve --broker` runs them (each in a session of its own, so one can be
killed whole, as a machine dies), and the bot's side as `tutor run` builds it: a Tutor
over a throwaway SQLite file with `start_sandbox` on the fleet's address. A learner's
answer goes through `ServedCards`, the path a Discord click takes; the operator's view is
what /healthz and /metrics serve, and the bot's and hosts' log lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

from bot.app import App, build, start_sandbox
from bot.bench.local_redis import LocalRedis
from bot.engine import CardInPlay, TutorError
from bot.observability import FLEET, REGISTRY
from bot.sandbox.broker import GROUP, FleetTiming, Keys, connect
from bot.sandbox.process import PROJECT_ROOT, service_environment
from bot.sandbox.protocol import Limits
from bot.sandbox.service.service import BROKER_VARIABLE

CARD = "gradient-accumulation/train-loop"
START_S = 180.0  # a host imports torch and warms a zygote; slow on a busy machine


class LogTap(logging.Handler):
    """The bot's log lines (WARNING and up), kept with the time they were written."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((time.monotonic(), f"{record.levelname} {record.getMessage()}"))

    def first(self, since: float, pattern: str) -> str | None:
        return next((line for at, line in self.lines if at >= since
                     and re.search(pattern, line)), None)


class Host:
    """One `tutor sandbox serve --broker` process; its log in a file."""

    def __init__(self, broker: str, limits: Limits, fleet: dict, folder: Path, n: int):
        self.log_path = folder / f"host-{n}.log"
        env = {**service_environment(), BROKER_VARIABLE: broker}
        with open(self.log_path, "wb") as log:
            self.process = _spawn([sys.executable, "-m", "bot.sandbox.service",
                                   "--limits", json.dumps(dataclasses.asdict(limits)),
                                   "--fleet", json.dumps(fleet)], env, log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """The machine dies: the host, its zygote and its children, at once."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except Exception:  # noqa: BLE001
                self.kill()


def _spawn(argv: list[str], env: dict, log):
    import subprocess

    return subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)


class Bed:
    def __init__(self, fast: bool):
        self.limits = Limits(wall_s=3.0, cpu_s=5) if fast else Limits()
        quick = {"claim_idle_s": 8.0, "claim_every_s": 0.5, "heartbeat_s": 0.5,
                 "block_s": 0.5, "refused_retry_s": 2.0} if fast else {}
        self.fleet = quick
        self.timing = FleetTiming.for_limits(self.limits.wall_s, self.limits.reply_margin_s,
                                             **quick)
        self.folder = Path(tempfile.mkdtemp(prefix="tutor-faults-"))
        self.redis = LocalRedis(appendonly=True)
        self.hosts: list[Host] = []
        self.tap = LogTap()
        self.app: App | None = None
        self.sandbox = None
        self._learners = 0

    # -- the world -----------------------------------------------------------------------

    async def open(self) -> None:
        self.redis.start()
        logging.getLogger("bot").addHandler(self.tap)
        self.app = build(database_url=f"sqlite:///{self.folder / 'tutor.db'}", sandbox=False)
        self.sandbox = self.bot_side()
        self.play = self.app.engine.cards

    def bot_side(self):
        """The bot's sandbox client on the fleet; called again, a bot restarting it (the
        bench swaps the judge in place of a whole new process)."""
        code = start_sandbox(self.redis.bot_url, limits=self.limits, timing=self.timing,
                             runs_per_minute=10**6)
        self.app.tutor.code_judge = code and code.judge
        return code

    def close(self) -> None:
        for host in self.hosts:
            host.stop()
        if self.app is not None:
            self.app.close()
        logging.getLogger("bot").removeHandler(self.tap)
        self.redis.close()

    def host(self, password: str | None = None) -> Host:
        broker = self.redis.host_url if password is None else self.redis.url(
            "tutor-sandbox", password)
        host = Host(broker, self.limits, self.fleet, self.folder, len(self.hosts))
        self.hosts.append(host)
        return host

    async def hosts_up(self, count: int) -> None:
        """Exactly `count` hosts running and reporting (started or stopped as needed)."""
        running = [host for host in self.hosts if host.process.poll() is None]
        for host in running[count:]:
            host.stop()
        for _ in range(count - len(running)):
            self.host()
        await self.live(count)

    def live_hosts(self) -> int:
        try:
            return len(self._fleet(lambda c: c.hosts(fresh=True))["cpu"])
        except Exception:  # noqa: BLE001 - Redis away: none that we can see
            return 0

    async def live(self, count: int) -> float:
        return await self.until(lambda: self.live_hosts() == count, f"{count} live host(s)")

    def _fleet(self, call):
        client = self.sandbox.client
        return asyncio.run_coroutine_threadsafe(call(client), self.sandbox.loop).result(30)

    def runs_by_host(self) -> dict[Host, int]:
        """The runs each live host says it started (its heartbeat; its name holds its pid)."""
        reports = self._fleet(lambda c: c.hosts(fresh=True))["cpu"]
        return {host: int(report.get("runs") or 0) for host in self.hosts
                for name, report in reports.items() if f"-{host.process.pid}-" in name}

    async def run_in_hand(self) -> Host:
        """The host holding a run now: the consumer its job is pending with (the stream's
        own record, at once; a heartbeat's count would come up to a beat late)."""
        looker = connect(self.redis.admin_url)
        try:
            while True:
                for entry in await looker.xpending_range(Keys().jobs("cpu"), GROUP, "-", "+",
                                                         10):
                    holder = next((h for h in self.hosts
                                   if f"-{h.process.pid}-" in entry["consumer"]), None)
                    if holder is not None:
                        return holder
                await asyncio.sleep(0.05)
        finally:
            await looker.aclose()

    @staticmethod
    async def until(condition, what: str, timeout_s: float = START_S) -> float:
        """Seconds until `condition()` (called in a thread) holds."""
        started = time.monotonic()
        while not await asyncio.to_thread(condition):
            if time.monotonic() - started > timeout_s:
                raise RuntimeError(f"no {what} within {timeout_s:.0f} s")
            await asyncio.sleep(0.1)
        return round(time.monotonic() - started, 1)

    # -- a learner -----------------------------------------------------------------------

    def serve(self) -> CardInPlay:
        """The code card, served to a new learner as /practice serves it."""
        self._learners += 1
        learner = self.app.tutor.learner(f"discord:{self._learners}")
        return self.play.serve(learner, mode="practice", card_id=CARD)

    def code(self, sleep_s: float = 0.0) -> str:
        """The card's reference loop (a correct answer), after a nap while it runs."""
        reference = self.app.tutor.library.card(CARD).reference
        return f"import time\ntime.sleep({sleep_s})\n{reference}" if sleep_s else reference

    async def submit(self, playing: CardInPlay, code: str) -> dict:
        """What the learner is told, after how long, and whether a review was recorded."""
        started = time.monotonic()
        try:
            owner = self.app.store.served.load(playing.served.serve_id).owner
            verdict = await asyncio.to_thread(self.play.judge_code, playing, code, owner)
            said = f"judged: {'correct' if verdict.correct else 'not correct'}"
            if not verdict.correct:
                said += f" ({verdict.report.status}: {'; '.join(verdict.report.feedback)})"
        except TutorError as exc:
            said = str(exc)
        return {"learner_sees": said, "learner_waited_s": round(time.monotonic() - started, 1),
                "recorded": self.app.store.reviews.get(playing.served.serve_id) is not None}

    async def recovered(self, repair: str, do, playing: CardInPlay | None = None) -> dict:
        """`do()` the repair, then time it until a card's answer (`playing`, or a new card)
        is judged again: the row's recovery."""
        started = time.monotonic()
        await do() if asyncio.iscoroutinefunction(do) else do()
        await self.until_judged(playing or self.serve(), self.code())
        return {"recovery": repair, "recovery_s": round(time.monotonic() - started, 1)}

    async def until_judged(self, playing: CardInPlay, code: str) -> float:
        """Seconds until the same card's answer is judged, sent again every second."""
        started = time.monotonic()
        while not (await self.submit(playing, code))["learner_sees"].startswith("judged"):
            if time.monotonic() - started > START_S:
                raise RuntimeError("the code was never judged again")
            await asyncio.sleep(1.0)
        return round(time.monotonic() - started, 1)

    # -- the operator --------------------------------------------------------------------

    def health(self) -> dict:
        fleet = FLEET.health() or {}
        return {"status": "degraded" if fleet.get("reasons") else "ok",
                "reasons": fleet.get("reasons", []), "hosts": fleet.get("hosts")}

    @staticmethod
    def counters() -> dict[str, float]:
        """The fleet's counters the operator alerts on, by label."""
        found = {}
        for family in REGISTRY.collect():
            if family.name in ("tutor_sandbox_unjudged", "tutor_sandbox_refusals",
                               "tutor_sandbox_reclaims"):
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        label = next(iter(sample.labels.values()), "")
                        found[f"{family.name}{{{label}}}"] = sample.value
        return found

    @staticmethod
    def moved(before: dict, after: dict) -> dict:
        return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}

    def runs_on_hosts(self) -> int:
        """The runs the live hosts say they started (their heartbeat reports)."""
        return sum(self.runs_by_host().values())

    async def admin(self, *command: str):
        client = connect(self.redis.admin_url)
        try:
            return await client.execute_command(*command)
        finally:
            await client.aclose()
