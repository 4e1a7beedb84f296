"""Scheduling policies the learning simulation drives, behind one small interface.

A `Policy` makes one `Schedule` per learner. The simulation asks the schedule for the next
card of the study day (`next_card`, None when the day is done) and tells it what happened
(`record`, with the learner's whole `Answer`: attempts, hint, latency, the mistakes whose
explanations were shown).

Implemented here: one direct driver (`SimSchedule`) with the engine's rules, parameterised by
a grade map, the active scheduler and remediation on or off. Which card next is the engine's
own rule (scheduler/next_card.py `pick_next`); what an answer does is written as
bot/engine/tutor.py `_finish` applies it. Every card keeps both an SM-2 state (scheduler/sm2.py)
and an FSRS state (scheduler/fsrs_review.py), moved by every new or due review with the same
quality; the active one decides when the card is due again (SM-2 ties by E-Factor, FSRS by
stability). A remedy is graded but moves no schedule and no drill (scheduler/remediation.py
says which cards and when); a drill moves no schedule, only whether the card still needs a
drill (its own quality below 4).

Two grade maps: "ours", scheduler/grading.py's `quality_for` (only a first try shows recall);
"naive", any correct answer within the attempts passes (quality 4), else 1.
`bot.bench.sim.engine_policy` runs the real engine behind the same interface; a test holds the two
to the same decisions and grades for SM-2 and FSRS, each with remediation on and off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache
from typing import ClassVar, Protocol

from bot.bench.sim.deck import SimCard
from bot.bench.sim.learner import Answer
from scheduler.choice import SchedulerName
from scheduler.fsrs_review import FSRSState, review_fsrs
from scheduler.grading import needs_drill, quality_for
from scheduler.next_card import Pick, pick_next
from scheduler.remediation import (
    REMEDIES_PER_DAY,
    REMEDIES_PER_MISTAKE,
    REMEDY_DELAY_DAYS,
    Candidate,
    corrects,
    pick_remedies,
    remedy_day,
)
from scheduler.sm2 import NEW, SM2State, review

__all__ = ["DAY0", "POLICIES", "GradeMap", "Pick", "Policy", "Schedule", "SimPolicy",
           "SimSchedule", "naive_quality", "ours_quality"]

GradeMap = Callable[[bool, int, bool, int], int]  # (correct, attempts, hint, latency) -> q
DAY0 = date(2026, 1, 5)  # study day 0 as a date (bot/bench/sim/engine_policy.py's first day)


class Schedule(Protocol):
    """One learner's cards under one policy. ``day`` is the study day (0, 1, ...), ``at_ms``
    the time since the day's session began."""

    def next_card(self, day: int, at_ms: int) -> Pick | None: ...

    def record(self, day: int, at_ms: int, pick: Pick, card: SimCard,
               answer: Answer) -> int | None:
        """Take the learner's answer to ``pick`` (served at ``at_ms``); the quality given."""
        ...


class Policy(Protocol):
    name: str

    def schedule(self, cards: list[SimCard], new_per_day: int, key: str) -> Schedule: ...

    def describe(self) -> str: ...


def naive_quality(correct: bool, attempts: int, hint_used: bool, latency_ms: int) -> int:
    """Any correct answer within the attempts is a pass, whatever the attempts or hint."""
    return 4 if correct else 1


def ours_quality(correct: bool, attempts: int, hint_used: bool, latency_ms: int) -> int:
    return quality_for(correct, attempts, hint_used, latency_ms)


@cache  # a few hundred study days, asked for on every remedy decision
def as_date(day: int) -> date:
    return DAY0 + timedelta(days=day)


@dataclass(slots=True)
class _State:
    """One card's memory of the learner, as scheduler/next_card.py `Met` reads it."""

    sm2: SM2State
    fsrs: FSRSState
    due: int  # SM-2's due study day
    fsrs_due: int
    fsrs_active: bool  # which of the two is in force
    last_day: int  # study day of the last new or due review
    last_at: tuple[int, int]  # (day, ms) of the last scheduled review: drill order
    drill_pending: bool
    remedy: int | None = None  # study day of a pending remedy
    relearn: ClassVar[bool] = False  # the simulated deck never changes

    @property
    def due_day(self) -> int:
        return self.fsrs_due if self.fsrs_active else self.due

    @property
    def risk(self) -> float:
        return self.fsrs.stability if self.fsrs_active else self.sm2.ef100


@dataclass(slots=True)
class _Today:
    """Counts that restart every study day."""

    day: int = -1
    new: int = 0
    remedies: int = 0


class SimSchedule:
    """One learner's cards: SM-2 and FSRS kept side by side, ``active`` ("sm2" or "fsrs")
    deciding what is due; ``remediation`` turns on remedies and the new-card reorder."""

    def __init__(self, cards: list[SimCard], new_per_day: int, grade: GradeMap,
                 active: str = "sm2", remediation: bool = False):
        if SchedulerName.parse(active) is None:
            raise ValueError(f"active scheduler must be sm2 or fsrs, got {active!r}")
        self.order = [card.id for card in cards]
        self.tests = {card.id: card.mistake_ids for card in cards}
        self.new_per_day = new_per_day
        self.grade = grade
        self.fsrs_active = active == SchedulerName.FSRS
        self.remediation = remediation
        self.states: dict[str, _State] = {}
        self.open: set[str] = set()  # misconceptions shown and not yet answered past
        self.today = _Today()

    def _on(self, day: int) -> _Today:
        if self.today.day != day:
            self.today = _Today(day)
        return self.today

    def next_card(self, day: int, at_ms: int) -> Pick | None:
        states = self.states
        unseen = [c for c in self.order if c not in states] \
            if len(states) < len(self.order) else []
        return pick_next(states, unseen, day, new_left=self.new_per_day - self._on(day).new,
                         remediation=self.remediation, tests=self.tests,
                         open_mistakes=self.open)

    def record(self, day: int, at_ms: int, pick: Pick, card: SimCard,
               answer: Answer) -> int:
        quality = self.grade(answer.correct, answer.attempts, answer.hint_used,
                             answer.latency_ms)
        today = self._on(day)
        if pick.kind == "drill":
            self.states[pick.card_id].drill_pending = needs_drill(quality)
        elif pick.kind == "remedy":
            self.states[pick.card_id].remedy = None
            today.remedies += 1
        else:
            self._review(day, at_ms, pick, answer, quality)
        self.open.update(answer.shown)
        self.open -= corrects(card.mistake_ids, answer.correct, answer.attempts,
                              answer.hint_used, answer.shown)
        if self.remediation and answer.shown:
            self._remedy(day, pick.card_id, answer.shown)
        return quality

    def _review(self, day: int, at_ms: int, pick: Pick, answer: Answer, quality: int) -> None:
        """A new or due review: both schedulers move, whichever is active; a pending remedy
        is dropped (the review is more than it was for)."""
        state = self.states.get(pick.card_id)
        sm2 = review(NEW if state is None else state.sm2, quality)
        fsrs, interval = review_fsrs(None if state is None else state.fsrs, quality,
                                     as_date(day))
        done_at = (day, at_ms + answer.duration_ms)
        self.states[pick.card_id] = _State(sm2, fsrs, day + sm2.interval, day + interval,
                                           self.fsrs_active, day, done_at, needs_drill(quality))
        if pick.kind == "new":
            self.today.new += 1

    def _remedy(self, day: int, answered: str, shown: tuple[str, ...]) -> None:
        """Bring the learner's other cards on the shown mistakes to a remedy, within the
        day's bound (pending remedies and those served today)."""
        pending = sum(s.remedy is not None for s in self.states.values())
        budget = REMEDIES_PER_DAY - (pending + self.today.remedies)
        if budget <= 0:
            return
        today = as_date(day)
        met = {cid: Candidate(cid, as_date(s.due_day), as_date(s.last_day),
                              s.remedy is not None) for cid, s in self.states.items()}
        picked = pick_remedies(shown, answered, self.tests, met, today, budget)
        on = (remedy_day(today) - DAY0).days
        for cid in picked:
            self.states[cid].remedy = on


@dataclass(frozen=True)
class SimPolicy:
    name: str
    grade: GradeMap
    description: str
    active: str = "sm2"
    remediation: bool = False

    def schedule(self, cards: list[SimCard], new_per_day: int, key: str) -> SimSchedule:
        return SimSchedule(cards, new_per_day, self.grade, self.active, self.remediation)

    def describe(self) -> str:
        return self.description


_OURS = ("scheduler/grading.py quality_for: first try 5/4/3 by latency (20 s / 60 s), 2 after a "
         "hint, 1 on attempt 2, 0 after")
_REMEDIATION = (f"; remediation (scheduler/remediation.py): a shown mistake brings up to "
                f"{REMEDIES_PER_MISTAKE} met cards on it to a remedy {REMEDY_DELAY_DAYS} day(s) "
                f"later (at most {REMEDIES_PER_DAY} a day; after new cards, before drills; "
                "moving no schedule), and unseen cards on an open misconception come first "
                "among new")
_SM2_OURS = (f"SM-2 (scheduler/sm2.py) with {_OURS}; rule-7 drills of q < 4; due first, then "
             "new within new_per_day, then drills")
_SM2_NAIVE = ("SM-2 with a naive grade map: correct within 3 attempts = 4 (whatever the "
              "attempts, hint or latency), never correct = 1; same rules and drills as sm2-ours")
_FSRS = ("FSRS (scheduler/fsrs_review.py, py-fsrs, desired retention 0.9, q 0-2 Again, 3 Hard, "
         f"4-5 Good) with {_OURS}; due by FSRS (due day, stability); same rules and drills as "
         "sm2-ours")


def _policies(*policies: SimPolicy) -> dict[str, Policy]:
    return {policy.name: policy for policy in policies}


POLICIES: dict[str, Policy] = _policies(
    SimPolicy("sm2-ours", ours_quality, _SM2_OURS),
    SimPolicy("sm2-naive", naive_quality, _SM2_NAIVE),
    SimPolicy("fsrs", ours_quality, _FSRS, "fsrs"),
    SimPolicy("sm2-ours+remediation", ours_quality, _SM2_OURS + _REMEDIATION, "sm2", True),
    SimPolicy("sm2-naive+remediation", naive_quality, _SM2_NAIVE + _REMEDIATION, "sm2", True),
    SimPolicy("fsrs+remediation", ours_quality, _FSRS + _REMEDIATION, "fsrs", True),
)
