"""A server's FSRS parameters fitted to its own reviews (issue 39.1): which servers are due a
fit, the fit itself (in a child process, so torch never loads in the bot), and applying or
reverting one. The rules (the floor, the held-out gate, what a fit changes) are
scheduler/server_fit.py's; the versions and the claim are the store's (`store.fits`)."""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.engine.errors import TutorError
from scheduler.evaluation import Review, reviews_from_log
from scheduler.server_fit import (
    ServerFit,
    Z,
    fit_due,
    fit_server,
    floor_refusal,
    interval_changes,
    workload,
)
from scheduler.storage.fits import NotApplicable, NothingToRevert, ServerSize
from scheduler.storage.models import FSRSParameters
from scheduler.storage.store import Store
from scheduler.studyday import study_day

log = logging.getLogger("tutor.fits")

LEASE = timedelta(hours=2)  # a fit claim older than this was left by a process that died

Fitter = Callable[[Sequence[Review], Sequence[float]], ServerFit]


class FitRefused(TutorError):
    """No fit now: too few reviews, another fit running, or nothing to apply or revert."""


@dataclass(frozen=True)
class FitPanel:
    """What a server's admins see: its size, the parameters in force (None: the defaults)
    and the newest fit, with its held-out comparison and what it changes (`report`)."""

    guild_id: int
    size: ServerSize
    refusal: str | None  # why the server is not fitted yet (below the floor)
    in_force: FSRSParameters | None
    latest: FSRSParameters | None


@dataclass(frozen=True)
class FitDone:
    """One fit: stored as `fit` (a new version); `applied` when it passed and was put in
    force."""

    fit: FSRSParameters
    applied: bool


def fit_in_child(reviews: Sequence[Review], in_force: Sequence[float]) -> ServerFit:
    """`fit_server` in a fresh process: torch's memory and threads leave with it."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_share_cpus) as pool:
        return pool.submit(fit_server, list(reviews), tuple(in_force)).result()


def _share_cpus() -> None:
    """Half the machine at most: the bot and the sandbox keep working during a fit."""
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 2) // 2))


class ServerFits:
    """`engine.fits`."""

    def __init__(self, store: Store, clock: Callable[[], datetime],
                 fitter: Fitter = fit_in_child):
        self.store, self.clock, self.fitter = store, clock, fitter

    def panel(self, guild_id: int) -> FitPanel:
        fits = self.store.fits
        size = fits.size(guild_id)
        version = fits.in_force(guild_id)
        history = fits.history(guild_id, 1)
        return FitPanel(guild_id, size, floor_refusal(size.reviews, size.days),
                        fits.get(version) if version else None,
                        history[0] if history else None)

    def due(self) -> list[int]:
        """The servers the weekly rule says to fit now (scheduler/server_fit.py `fit_due`)."""
        now, due = self.clock(), []
        for guild_id in self.store.fits.servers():
            size = self.store.fits.size(guild_id)
            last = self.store.fits.history(guild_id, 1)
            if fit_due(size.reviews, size.days, last[0].reviews if last else None,
                       last[0].created_at if last else None, now):
                due.append(guild_id)
        return due

    def run_due(self) -> list[FitDone]:
        """Fit every server that is due (the background job); a server another process is
        fitting is left to it."""
        done = []
        for guild_id in self.due():
            try:
                done.append(self.fit(guild_id, "job"))
            except FitRefused as exc:
                log.info("server %s not fitted: %s", guild_id, exc)
        return done

    def fit(self, guild_id: int, by: str, *, apply: bool = True) -> FitDone:
        """Fit the server's parameters now and store the fit; put it in force when it
        passed and ``apply``. FitRefused below the floor or while another fit runs."""
        fits = self.store.fits
        size = fits.size(guild_id)
        refusal = floor_refusal(size.reviews, size.days)
        if refusal:
            raise FitRefused(refusal)
        if not fits.claim(guild_id, self.clock(), LEASE):
            raise FitRefused("A fit of this server is running already.")
        try:
            version = fits.in_force(guild_id)
            before = fits.parameters(version)
            fit = self.fitter(reviews_from_log(fits.reviews(guild_id)), before)
            if fit.refused:
                raise FitRefused(fit.refused)
            now = self.clock()
            zone = self.store.servers.settings(guild_id).timezone
            load = workload(fits.card_states(guild_id), study_day(now, zone), before,
                            fit.parameters)
            report = {**fit.as_dict(), "in_force_version": version,
                      "intervals": [[c.ratings, c.before, c.after]
                                    for c in interval_changes(before, fit.parameters)],
                      "workload": [load.days, load.before_per_day, load.after_per_day]}
            stored = fits.save(FSRSParameters(
                guild_id=guild_id, parameters=list(fit.parameters), reviews=fit.reviews,
                passed=fit.passed, report=report, fitted_by=by, created_at=now),
                apply=apply and fit.passed)
        finally:
            fits.release(guild_id)
        log.info("server %s fitted by %s: version %s, %s", guild_id, by, stored.version,
                 "applied" if stored.applied_at else "passed, not applied" if fit.passed
                 else "not better on held-out reviews: kept")
        return FitDone(stored, stored.applied_at is not None)

    def apply(self, guild_id: int, version: int | None = None) -> FSRSParameters:
        """Put a passed fit in force (default: the newest fit); FitRefused if it did not
        pass or is in force already."""
        if version is None:
            history = self.store.fits.history(guild_id, 1)
            if not history:
                raise FitRefused("This server has no fit yet.")
            version = history[0].version
        try:
            self.store.fits.apply(guild_id, version, self.clock())
        except NotApplicable:
            raise FitRefused(f"Fit {version} cannot be applied: it did not beat the "
                             "parameters in force, or it is in force already.") from None
        return self.store.fits.get(version)

    def revert(self, guild_id: int) -> int:
        """Go back to what was in force before the current fit; that version (0: the
        defaults)."""
        try:
            return self.store.fits.revert(guild_id, self.clock())
        except NothingToRevert:
            raise FitRefused("This server already schedules with FSRS's default "
                             "parameters.") from None


# -- words ----------------------------------------------------------------------------------

def _version(fit: FSRSParameters | None) -> str:
    return "FSRS's default parameters" if fit is None else \
        f"fit #{fit.version} ({fit.created_at:%Y-%m-%d}, {fit.reviews:,} reviews)"


def fit_lines(panel: FitPanel) -> list[str]:
    """The panel in short lines, for any front end: what is in force; the newest fit's
    held-out comparison and what it changes; why there is none yet."""
    lines = [f"In force: {_version(panel.in_force)}."]
    latest = panel.latest
    if latest is None:
        lines.append(f"No fit yet: {panel.refusal}." if panel.refusal else
                     "No fit yet: the weekly job fits this server's parameters soon.")
        return lines
    report = latest.report
    status = ("in force" if panel.in_force and panel.in_force.version == latest.version
              else "reverted" if latest.reverted_at else
              "passed, not applied" if latest.passed else "not applied: not better")
    lines.append(f"Newest: fit #{latest.version}, {latest.created_at:%Y-%m-%d}, "
                 f"{status}.")
    losses = {name: f"{name} {score['log_loss']:.4f}"
              for name, score in report["scores"].items()}
    if not report["in_force_version"]:
        del losses["in force"]  # the defaults were in force
    lines.append(f"Held-out log loss ({report['held_out']:,} most recent reviews, "
                 f"{report['learners']:,} learners; lower is better): "
                 + ", ".join(losses.values()) + ".")
    for gate in report["gates"]:
        verdict = "yes" if gate["passed"] else "no"
        lines.append(f"Better than {gate['versus']} by {gate['gain']:+.4f} "
                     f"± {gate['standard_error']:.4f} (needs more than "
                     f"{Z:g} × that): {verdict}.")
    lines.append("Days to the next review, now → fitted: " + "; ".join(
        f"{ratings} {before} → {after}" for ratings, before, after in report["intervals"]))
    days, before, after = report["workload"]
    lines.append(f"Reviews a day over the next {days} days (if all recalled): "
                 f"{before:.1f} → {after:.1f}.")
    return lines
