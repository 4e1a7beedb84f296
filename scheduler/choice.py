"""Which scheduler and whether remediation: the learner's choice, else their server's, else
the product's default (decided by `tutor bench learning`, README "Learning")."""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["DEFAULT_REMEDIATION", "DEFAULT_SCHEDULER", "SCHEDULERS", "Choice", "resolve"]

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
    for choice in (remediation, server_remediation, DEFAULT_REMEDIATION):
        if choice is not None:
            return Choice(scheduler, choice)
    raise AssertionError("unreachable: the default is a bool")
