"""What the engine hands a front end back: the verdict on an answer (with a code answer's
report) and a learner's progress. Plain frozen values; bot/engine/tutor.py makes them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from bot.engine.judging import Finding
from bot.engine.served import Served
from scheduler.choice import Choice
from scheduler.grading import MAX_ATTEMPTS


@dataclass(frozen=True, slots=True)
class CodeReport:
    """What the sandbox and a card's checker said about a code answer."""

    status: str  # ok | error | timeout | memory | output_limit | refused
    passed: bool
    mistakes: tuple[str, ...] = ()
    feedback: tuple[str, ...] = ()
    stdout: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    served: Served
    correct: bool
    finished: bool
    findings: tuple[Finding, ...]
    quality: int | None = None
    due: date | None = None
    interval: int | None = None
    duplicate: bool = False
    report: CodeReport | None = None

    @property
    def attempts_left(self) -> int:
        return 0 if self.finished else MAX_ATTEMPTS - self.served.attempts


@dataclass(frozen=True, slots=True)
class Progress:
    today: date
    due_now: int
    new_left_today: int
    drills_left: int
    next_due: date | None
    choice: Choice  # the scheduler (whose due days these are) and remediation in force
