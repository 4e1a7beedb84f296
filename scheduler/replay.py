"""A card's schedule derived from its review log alone, for either scheduler.

Every graded review keeps SM-2 and FSRS states side by side (bot/engine/tutor.py `_finish`), so
switching schedulers changes only which due day counts. This module is the log-side
definition of those states: tests hold the live states to it, so a switch (and a switch back)
loses nothing. The migration that added FSRS (0007) derived existing cards' FSRS states the
same way, from its own frozen copy of this code (issue 38.6): changing this module does not
change that migration.

Only scheduling reviews (kinds new and review) move a state; a review logged with `restart`
(the card's content changed) starts it over first, as serving it did. Each review moves FSRS
with the parameters that were in force for it (its `fsrs_version`: 0 for py-fsrs's defaults,
else a server's fit, `fsrs_parameters`), so a state replays exactly across parameter changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import groupby

import sqlalchemy as sa
from fsrs.scheduler import DEFAULT_PARAMETERS

from scheduler.fsrs_review import FSRSState, review_fsrs, scheduler_with
from scheduler.sm2 import NEW, SM2State, review
from scheduler.studyday import due_day

__all__ = ["DEFAULTS", "LoggedReview", "Replayed", "backfill_fsrs", "replay",
           "stored_parameters"]

SCHEDULING = ("new", "review")
DEFAULTS = 0  # the parameter version of py-fsrs's defaults


@dataclass(frozen=True, slots=True)
class LoggedReview:
    kind: str
    quality: int
    study_day: date
    restart: bool = False
    fsrs_version: int = DEFAULTS


@dataclass(frozen=True, slots=True)
class Replayed:
    sm2: SM2State
    sm2_due: date | None
    lapses: int
    fsrs: FSRSState | None
    fsrs_due: date | None


def _defaults_only(version: int) -> Sequence[float]:
    if version != DEFAULTS:
        raise KeyError(f"FSRS parameter version {version}: not given")
    return DEFAULT_PARAMETERS


def replay(reviews: Iterable[LoggedReview],
           parameters: Callable[[int], Sequence[float]] = _defaults_only) -> Replayed:
    """The states a card's reviews (in the order they were recorded) leave behind;
    ``parameters``: a parameter version's 21 FSRS parameters."""
    sm2, sm2_due, lapses = NEW, None, 0
    fsrs: FSRSState | None = None
    fsrs_due = None
    for r in reviews:
        if r.kind not in SCHEDULING:
            continue
        if r.restart:
            sm2, lapses, fsrs = NEW, 0, None
        sm2 = review(sm2, r.quality)
        sm2_due = due_day(r.study_day, sm2.interval)
        lapses += r.quality < 3
        fsrs, interval = review_fsrs(fsrs, r.quality, r.study_day,
                                     scheduler_with(parameters(r.fsrs_version)))
        fsrs_due = due_day(r.study_day, interval)
    return Replayed(sm2, sm2_due, lapses, fsrs, fsrs_due)


def _log_query(log_t: sa.Table, *where) -> sa.Select:
    c = log_t.c
    return (sa.select(c.learner_id, c.card_id, c.kind, c.quality, c.study_day, c.restart,
                      c.fsrs_version)
            .where(c.kind.in_(SCHEDULING), *where).order_by(c.learner_id, c.card_id, c.id))


def stored_parameters(conn: sa.Connection) -> Callable[[int], Sequence[float]]:
    """Every stored parameter version's parameters (and 0, the defaults), by version."""
    table = sa.table("fsrs_parameters", sa.column("version"), sa.column("parameters", sa.JSON))
    stored = {r.version: tuple(r.parameters) for r in conn.execute(sa.select(table))}
    stored[DEFAULTS] = tuple(DEFAULT_PARAMETERS)
    return stored.__getitem__


def replayed_states(conn: sa.Connection, *where) -> dict[tuple[int, str], Replayed]:
    """(learner id, card id) -> the replayed states, for the log rows matching ``where``."""
    log_t = sa.table("review_log", *(sa.column(n) for n in (
        "id", "learner_id", "card_id", "kind", "quality", "study_day", "restart",
        "fsrs_version")))
    parameters = stored_parameters(conn)
    rows = conn.execute(_log_query(log_t, *where))
    return {key: replay((LoggedReview(r.kind, r.quality, _as_date(r.study_day),
                                      bool(r.restart), r.fsrs_version) for r in group),
                        parameters)
            for key, group in groupby(rows, key=lambda r: (r.learner_id, r.card_id))}


def backfill_fsrs(conn: sa.Connection) -> int:
    """Give every card state without an FSRS state the one its log replays to; how many."""
    state_t = sa.table("card_state", *(sa.column(n) for n in (
        "learner_id", "card_id", "fsrs_stability", "fsrs_difficulty", "fsrs_due_day")))
    missing = {(r.learner_id, r.card_id) for r in conn.execute(
        sa.select(state_t.c.learner_id, state_t.c.card_id)
        .where(state_t.c.fsrs_due_day.is_(None)))}
    if not missing:
        return 0
    update = state_t.update().where(
        state_t.c.learner_id == sa.bindparam("k_learner"),
        state_t.c.card_id == sa.bindparam("k_card"))
    rows = [{"k_learner": learner, "k_card": card, "fsrs_stability": r.fsrs.stability,
             "fsrs_difficulty": r.fsrs.difficulty, "fsrs_due_day": r.fsrs_due}
            for (learner, card), r in replayed_states(conn).items()
            if (learner, card) in missing and r.fsrs is not None]
    if rows:
        conn.execute(update, rows)
    return len(rows)


def _as_date(value) -> date:
    # A bare sa.table() carries no column types: SQLite hands back text.
    return value if isinstance(value, date) else date.fromisoformat(value)
