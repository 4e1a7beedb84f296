"""What the engine hands a front end back: the verdict on an answer (with a code answer's
report) and a learner's progress. Plain frozen values; bot/engine/tutor.py makes them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from bot.engine.judging import Finding
from bot.engine.served import Served
from content.loader import AnyCard
from scheduler.choice import Choice
from scheduler.grading import MAX_ATTEMPTS

# Code that stopped before it did what its card judges (a typo, a NameError before a train
# loop's first backward() or before a behaviour exercise's first case returned) may be sent
# again this many times on one served card without using its attempt.
FREE_RETRIES = 3
# What a free retry keeps for the next try (`Served.retry_code`, `retry_error`): the code, as
# much as Discord's code modal holds, and the first line of what stopped it.
RETRY_CODE, RETRY_ERROR = 4000, 300


@dataclass(frozen=True, slots=True)
class CodeReport:
    """What the sandbox and a card's checker said about a code answer."""

    status: str  # ok | error | timeout | memory | output_limit | refused
    passed: bool
    mistakes: tuple[str, ...] = ()
    feedback: tuple[str, ...] = ()
    stdout: str = ""
    # Whether the code got as far as its card judges (True when nobody can tell): a train
    # loop's backward() or optimizer step, a behaviour exercise's case that returned.
    trained: bool = True

    @property
    def ran_no_training(self) -> bool:
        """The code raised, or was refused, before it did anything its card judges (`trained`:
        a train loop's backward() or step, a behaviour exercise's case that returned), and
        no mistake explains the error: it says nothing of what the card teaches, so it is not
        judged (the one rule for every code card and front end). A timeout, a memory or
        output limit or a crash can have come mid-run: never this."""
        return (self.status in ("error", "refused") and not self.trained
                and not self.passed and not self.mistakes)


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
    # A code submission that ran no training: not judged, no attempt used.
    retry: bool = False
    # Set by `Tutor.answer`: the card judged, and the learner's day it was judged on (in
    # the calendar the card was served in), so a front end needs no call back.
    card: AnyCard | None = None
    today: date | None = None
    # Once finished: the mistakes of the card's earlier attempts, an attempt's each (their
    # explanation was kept for this last verdict: before the last try a wrong pick is told
    # in a line).
    earlier: tuple[tuple[Finding, ...], ...] = ()

    @property
    def attempts_left(self) -> int:
        return 0 if self.finished else MAX_ATTEMPTS - self.served.attempts

    @property
    def retries_left(self) -> int:
        """How many more code submissions that run no training are free on this card."""
        return max(0, FREE_RETRIES - self.served.retries)


@dataclass(frozen=True, slots=True)
class Progress:
    today: date
    due_now: int
    new_left_today: int
    drills_left: int
    next_due: date | None
    choice: Choice  # the scheduler (whose due days these are) and remediation in force
    cards: int  # the cards these counts are over (the decks played here, servable)
    seen: int  # of them, the ones the learner was served before
