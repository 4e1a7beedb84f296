"""Which scheduler and whether remediation: the learner's choice, else their server's, else
the product's default (decided by `tutor bench learning`: README, "Scheduling and
remediation")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Literal, NamedTuple

import sqlalchemy as sa

from scheduler.fsrs_review import FSRSState

__all__ = ["DEFAULT_REMEDIATION", "DEFAULT_SCHEDULER", "DUE_KEYS", "SCHEDULERS", "Choice",
           "fsrs_state", "resolve"]

SchedulerName = Literal["sm2", "fsrs"]
SCHEDULERS: dict[str, str] = {"sm2": "SM-2", "fsrs": "FSRS"}
DEFAULT_SCHEDULER: SchedulerName = "sm2"
DEFAULT_REMEDIATION = False


class Choice(NamedTuple):
    """What is in force for one learner in one place."""

    scheduler: str
    remediation: bool


def resolve(learner_scheduler: str | None, server_scheduler: str | None,
            server_remediation: bool | None, remediation: bool | None = None) -> Choice:
    """``remediation``: a one-off choice that beats the server's."""
    scheduler = learner_scheduler or server_scheduler or DEFAULT_SCHEDULER
    if scheduler not in SCHEDULERS:  # a value from a newer or older version: the default
        scheduler = DEFAULT_SCHEDULER
    if remediation is None:
        remediation = server_remediation
    return Choice(scheduler, DEFAULT_REMEDIATION if remediation is None else remediation)


def fsrs_state(state: sa.Row) -> FSRSState | None:
    """A stored card state's FSRS memory (None: never reviewed since FSRS was kept)."""
    if state.fsrs_stability is None or state.last_review_day is None:
        return None
    return FSRSState(state.fsrs_stability, state.fsrs_difficulty, state.last_review_day)


# Per scheduler: a card state's due day, and the tie-break among cards due the same day
# (the one at more risk first: lower E-Factor, lower stability).
DUE_KEYS: dict[str, tuple[Callable[[sa.Row], date], Callable[[sa.Row], float]]] = {
    "sm2": (lambda s: s.due_day, lambda s: s.ef100),
    # A state from before FSRS was kept, not yet replayed: SM-2's due day meanwhile.
    "fsrs": (lambda s: s.fsrs_due_day or s.due_day, lambda s: s.fsrs_stability or 0.0),
}
