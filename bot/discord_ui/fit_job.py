"""The weekly fit of servers' FSRS parameters, run by a bot that runs the background jobs
(`reminders` on): the rule for which server is due is the engine's (`engine.fits.due`); the
fit runs in a child process, and the wait for it on a thread, off the event loop."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.engine import Engine

log = logging.getLogger("tutor.fits")

CHECK_EVERY = timedelta(hours=24)  # a server is fitted at most weekly (scheduler/server_fit)
FIRST_CHECK = timedelta(hours=1)  # after a start: not while the bot is busy connecting


class FitJob:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.scheduler = AsyncIOScheduler()

    def start(self) -> None:
        self.scheduler.add_job(self.run, "interval", seconds=CHECK_EVERY.total_seconds(),
                               next_run_time=datetime.now(UTC) + FIRST_CHECK,
                               id="fsrs-fit", max_instances=1, coalesce=True)
        self.scheduler.start()

    def stop(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    async def run(self) -> None:
        try:
            done = await asyncio.to_thread(self.engine.fits.run_due)
        except Exception:  # noqa: BLE001 - tomorrow's check tries again; operators see it
            log.exception("fitting servers' FSRS parameters failed")
            return
        for fitted in done:
            log.info("server %s: FSRS fit #%s %s", fitted.fit.guild_id, fitted.fit.version,
                     "applied" if fitted.applied else "kept for comparison")
