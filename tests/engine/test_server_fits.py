"""A server's FSRS parameters fitted to its own reviews (issue 39.1), through the engine and
the store: the floor, the held-out gate, versions, apply and revert, the weekly rule, one
fit at a time, and every state replaying exactly across parameter versions."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from bot.engine import FitRefused
from bot.engine.fits import ServerFits, fit_in_child
from scheduler.fsrs_review import review_fsrs, scheduler_with
from scheduler.replay import replayed_states
from scheduler.server_fit import fit_server
from scheduler.storage.fits import NotApplicable
from tests.helpers.records import RIGHT
from tests.helpers.server_logs import FAST_FORGETTERS, fsrs_world, seed_server_log

pytestmark = pytest.mark.postgres

GUILD, SMALL = 7001, 7002


def fits_of(store, clock) -> ServerFits:
    """The engine's fits with the fit in this process (the child process has its own test)."""
    return ServerFits(store, clock, fitter=fit_server)


@pytest.fixture
def big_server(store, clock):
    """A server of 10 learners who forget faster than FSRS's defaults expect, over 32 days,
    its last day yesterday."""
    reviews = fsrs_world(10, 32, 1, FAST_FORGETTERS)
    seed_server_log(store, GUILD, reviews, clock().date() - timedelta(days=32))
    return reviews


def answer_in(tutor, learner, guild_id: int, card_id: str):
    served = tutor.next_card(learner, only=card_id, guild_id=guild_id, mode="practice")
    return tutor.answer(served, RIGHT[card_id])


def test_a_small_server_keeps_the_defaults(store, clock, tutor):
    seed_server_log(store, SMALL, fsrs_world(10, 32, 1, FAST_FORGETTERS)[:1500],
                    clock().date() - timedelta(days=32))
    fits = fits_of(store, clock)
    assert fits.due() == []
    with pytest.raises(FitRefused, match="needs 2,000 reviews over 30 days; this server "
                                         "has 1,500"):
        fits.fit(SMALL, "test")
    panel = fits.panel(SMALL)
    assert panel.in_force is None and panel.latest is None
    assert panel.refusal.startswith("needs 2,000 reviews")
    assert store.fits.history(SMALL) == [] and store.fits.in_force(SMALL) == 0


def test_a_fit_that_beats_the_defaults_on_held_out_reviews_is_applied(big_server, store,
                                                                      clock):
    fits = fits_of(store, clock)
    assert fits.due() == [GUILD]
    done = fits.fit(GUILD, "test")
    fit = done.fit
    assert done.applied and fit.passed and store.fits.in_force(GUILD) == fit.version
    report = fit.report
    assert report["reviews"] == len(big_server) and report["learners"] == 10
    assert report["scores"]["fitted"]["log_loss"] < report["scores"]["defaults"]["log_loss"]
    (gate,) = report["gates"]  # the defaults were in force: one comparison
    assert gate["versus"] == "defaults" and gate["gain"] > 1.96 * gate["standard_error"] > 0
    assert {row[0] for row in report["intervals"]} >= {"Good", "Again"}
    assert report["workload"][0] == 30
    assert store.fits.parameters(fit.version) == tuple(fit.parameters)
    # Not due again until a week has passed and the reviews grew by a fifth.
    assert fits.due() == []
    clock.advance(days=8)
    assert fits.due() == []


def test_what_admins_read(big_server, store, clock):
    from bot.engine import fit_lines

    fits = fits_of(store, clock)
    before = fit_lines(fits.panel(GUILD))
    assert before == ["In force: FSRS's default parameters.",
                      "No fit yet: the weekly job fits this server's parameters soon."]
    fits.fit(GUILD, "test")
    lines = fit_lines(fits.panel(GUILD))
    assert lines[0].startswith("In force: fit #1 (")
    assert lines[1].endswith(", in force.")
    assert lines[2].startswith("Held-out log loss (")
    assert "Better than defaults by +0.0" in lines[3] and lines[3].endswith(": yes.")
    assert lines[4].startswith("Days to the next review, now → fitted: Good ")
    assert lines[5].startswith("Reviews a day over the next 30 days (if all recalled): ")


def test_answers_use_the_parameters_in_force_and_revert_restores_the_defaults(
        big_server, store, clock, tutor):
    fits = fits_of(store, clock)
    version = fits.fit(GUILD, "test").fit.version
    learner = tutor.learner("discord:1")
    first = answer_in(tutor, learner, GUILD, "mini/clear")
    (row,) = store.reviews.on_day(learner.id, first.today)
    assert row.fsrs_version == version and row.fsrs_stability_before is None
    state, _ = review_fsrs(None, row.quality, row.study_day,
                           scheduler_with(store.fits.parameters(version)))
    stored = store.reviews.state(learner.id, "mini/clear")
    assert stored.fsrs_stability == pytest.approx(state.stability)
    assert fits.revert(GUILD) == 0 and store.fits.in_force(GUILD) == 0
    assert fits.panel(GUILD).latest.reverted_at is not None
    clock.advance(days=3)
    answer_in(tutor, learner, GUILD, "mini/clear")
    last = store.reviews.on_day(learner.id, tutor.today(learner))[-1]
    assert last.fsrs_version == 0
    assert (last.fsrs_stability_before, last.fsrs_last_day_before) == (
        stored.fsrs_stability, stored.last_review_day)
    with pytest.raises(FitRefused, match="default parameters"):
        fits.revert(GUILD)
    fits.apply(GUILD)  # a passed fit can be put back
    assert store.fits.in_force(GUILD) == version


def test_a_fit_that_does_not_pass_cannot_be_applied(big_server, store, clock):
    fits = fits_of(store, clock)
    applied = fits.fit(GUILD, "test").fit.version
    # The same log again, judged against the fit now in force: it cannot beat itself by
    # more than its standard error.
    second = fits.fit(GUILD, "test")
    assert not second.applied and not second.fit.passed
    assert store.fits.in_force(GUILD) == applied
    assert [g["versus"] for g in second.fit.report["gates"]] == ["in force", "defaults"]
    with pytest.raises(FitRefused, match="cannot be applied"):
        fits.apply(GUILD)
    with pytest.raises(NotApplicable):
        store.fits.apply(GUILD + 1, applied, clock())  # another server's fit


def test_one_fit_at_a_time_and_a_dead_claim_expires(big_server, store, clock):
    assert store.fits.claim(GUILD, clock(), timedelta(hours=2))
    fits = fits_of(store, clock)
    with pytest.raises(FitRefused, match="running already"):
        fits.fit(GUILD, "test")
    assert fits.run_due() == []  # the job leaves it to the process that holds it
    clock.advance(hours=3)  # that process died
    assert fits.fit(GUILD, "test").applied
    assert store.fits.claim(GUILD, clock(), timedelta(hours=2))  # released after the fit


def test_every_state_replays_exactly_across_parameter_versions(big_server, store, clock,
                                                               tutor):
    fits = fits_of(store, clock)
    learner = tutor.learner("discord:1")
    versions = []
    for step in range(6):
        for card_id in RIGHT:
            answer_in(tutor, learner, GUILD, card_id)
        if step == 1:
            versions.append(fits.fit(GUILD, "test").fit.version)
        if step == 3:
            fits.revert(GUILD)
        clock.advance(days=2 + step)
    with store.engine.connect() as conn:
        logged = {v for (v,) in conn.execute(sa.text(
            "SELECT DISTINCT fsrs_version FROM review_log WHERE learner_id = :id"),
            {"id": learner.id})}
        replayed = replayed_states(conn, sa.column("learner_id") == learner.id)
    assert logged == {0, versions[0]}
    for card_id in RIGHT:
        live = store.reviews.state(learner.id, card_id)
        again = replayed[(learner.id, card_id)]
        assert (again.fsrs.stability, again.fsrs.difficulty, again.fsrs_due) == (
            live.fsrs_stability, live.fsrs_difficulty, live.fsrs_due_day)


@pytest.mark.sqlite_only
def test_the_fit_runs_in_a_child_process_with_the_same_result(big_server, store, clock):
    # What the bot's job runs: torch loads in a spawned process, never in the bot.
    child = ServerFits(store, clock, fitter=fit_in_child).fit(GUILD, "test", apply=False)
    here = fits_of(store, clock).fit(GUILD, "test", apply=False)
    assert child.fit.parameters == here.fit.parameters
    assert child.fit.passed and not child.applied
