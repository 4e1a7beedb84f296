"""The bot's daily check for servers due an FSRS fit (bot/discord_ui/fit_job.py): it fits a
due server once, leaves it until the weekly rule says again, and a failure of ours reaches
the operator's log without stopping the bot."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from bot.discord_ui.fit_job import FIRST_CHECK, FitJob
from scheduler.server_fit import fit_server
from tests.helpers.engines import engine_of
from tests.helpers.server_logs import FAST_FORGETTERS, fsrs_world, seed_server_log

GUILD = 8101


async def test_the_daily_check_fits_a_due_server_once(tutor, store, clock):
    seed_server_log(store, GUILD, fsrs_world(10, 32, 1, FAST_FORGETTERS),
                    clock().date() - timedelta(days=32))
    engine = engine_of(tutor)
    engine.fits.fitter = fit_server  # in this process (the child process: test_server_fits)
    job = FitJob(engine)
    await job.run()
    (fit,) = store.fits.history(GUILD)
    assert fit.fitted_by == "job" and store.fits.in_force(GUILD) == fit.version
    clock.advance(days=8)
    await job.run()  # a week on, but no fifth more reviews: not due
    assert len(store.fits.history(GUILD)) == 1


async def test_a_failed_check_is_logged_and_the_next_one_runs(tutor, store, clock, caplog):
    seed_server_log(store, GUILD, fsrs_world(10, 32, 1, FAST_FORGETTERS),
                    clock().date() - timedelta(days=32))
    engine = engine_of(tutor)

    def broken(reviews, in_force):
        raise RuntimeError("out of memory")

    engine.fits.fitter = broken
    job = FitJob(engine)
    with caplog.at_level(logging.ERROR, logger="tutor.fits"):
        await job.run()
    assert "fitting servers' FSRS parameters failed" in caplog.text
    assert store.fits.history(GUILD) == []
    engine.fits.fitter = fit_server  # the claim was released: the next check fits it
    await job.run()
    assert len(store.fits.history(GUILD)) == 1


async def test_the_job_is_scheduled_an_hour_after_the_start(tutor):
    job = FitJob(engine_of(tutor))
    job.start()
    try:
        (scheduled,) = job.scheduler.get_jobs()
        assert scheduled.id == "fsrs-fit"
        assert scheduled.trigger.interval == timedelta(days=1)
        wait = scheduled.next_run_time - datetime.now(UTC)
        assert FIRST_CHECK - timedelta(minutes=5) < wait <= FIRST_CHECK
    finally:
        job.stop()
