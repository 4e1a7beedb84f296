"""Which scheduler and whether remediation: the learner's choice, else their server's, else
the product's default (decided by `tutor bench learning`: README, "Scheduling and
remediation")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from scheduler.fsrs_review import FSRSState

__all__ = ["DEFAULT_REMEDIATION", "DEFAULT_SCHEDULER", "DUE", "DUE_KEYS", "SCHEDULERS",
           "Choice", "Due", "SchedulerName", "ServerChoice", "fsrs_state", "resolve"]


class SchedulerName(StrEnum):
    """A scheduler, by the name stored, sent in JSON and typed on the command line (a str
    enum: its members are those very strings)."""

    SM2 = "sm2"
    FSRS = "fsrs"

    @classmethod
    def parse(cls, value: str | None) -> SchedulerName | None:
        """The scheduler ``value`` names; None for None or a name this version does not
        know (written by a newer or older one). The one place a name is checked."""
        try:
            return None if value is None else cls(value)
        except ValueError:
            return None


# Display names, for every scheduler.
SCHEDULERS: dict[SchedulerName, str] = {SchedulerName.SM2: "SM-2", SchedulerName.FSRS: "FSRS"}
DEFAULT_SCHEDULER = SchedulerName.SM2
DEFAULT_REMEDIATION = False


class Choice(NamedTuple):
    """What is in force for one learner in one place: the scheduler, remediation, and the
    FSRS parameters (a version of `fsrs_parameters`; 0: py-fsrs's defaults)."""

    scheduler: SchedulerName
    remediation: bool
    fsrs_version: int = 0


class ServerChoice(NamedTuple):
    """What a server chose (None: it did not)."""

    scheduler: str | None = None
    remediation: bool | None = None
    fsrs_version: int | None = None


NO_SERVER_CHOICE = ServerChoice()


def resolve(learner_scheduler: str | None, server: ServerChoice = NO_SERVER_CHOICE,
            remediation: bool | None = None) -> Choice:
    """``remediation``: a one-off choice that beats the server's. A stored name this
    version does not know means the default."""
    scheduler = SchedulerName.parse(learner_scheduler or server.scheduler) or DEFAULT_SCHEDULER
    if remediation is None:
        remediation = server.remediation
    return Choice(scheduler, DEFAULT_REMEDIATION if remediation is None else remediation,
                  server.fsrs_version or 0)


class StoredState(Protocol):
    """What the rules here read of a stored card state."""

    due_day: date
    ef100: int
    fsrs_due_day: date | None
    fsrs_stability: float | None
    fsrs_difficulty: float | None
    last_review_day: date | None


def fsrs_state(state: StoredState) -> FSRSState | None:
    """A stored card state's FSRS memory (None: never reviewed since FSRS was kept)."""
    if state.fsrs_stability is None or state.last_review_day is None:
        return None
    # Here, not at the top: the command line reads SchedulerName without loading FSRS.
    from scheduler.fsrs_review import FSRSState

    return FSRSState(state.fsrs_stability, state.fsrs_difficulty, state.last_review_day)


@dataclass(frozen=True)
class Due:
    """When a card state is due under one scheduler, by card-state column: the Python key
    (`DUE_KEYS`) and the SQL expression (scheduler/storage/reminders.py) both derive from
    this, so the two cannot disagree."""

    column: str  # the due day
    fallback: str | None  # read while `column` is empty
    risk: str  # among cards due the same day, the lower (more at risk) first; empty: 0


DUE: dict[SchedulerName, Due] = {
    SchedulerName.SM2: Due("due_day", None, "ef100"),
    # A state from before FSRS was kept, not yet replayed: SM-2's due day meanwhile.
    SchedulerName.FSRS: Due("fsrs_due_day", "due_day", "fsrs_stability"),
}


def _due_key(due: Due) -> Callable[[Any], date]:
    if due.fallback is None:
        return attrgetter(due.column)
    column, fallback = attrgetter(due.column), attrgetter(due.fallback)
    return lambda s: column(s) or fallback(s)


def _risk_key(due: Due) -> Callable[[Any], float]:
    risk = attrgetter(due.risk)
    return lambda s: risk(s) or 0.0


# Per scheduler: a card state's due day, and the tie-break among cards due the same day.
DUE_KEYS: dict[SchedulerName, tuple[Callable[[StoredState], date],
                                    Callable[[StoredState], float]]] = {
    name: (_due_key(due), _risk_key(due)) for name, due in DUE.items()}
