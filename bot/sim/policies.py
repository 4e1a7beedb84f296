"""Scheduling policies the learning simulation drives, behind one small interface.

A `Policy` makes one `Schedule` per learner. The simulation asks the schedule for the next
card of the study day (`next_card`, None when the day is done) and tells it what happened
(`record`, with the learner's whole `Answer`: attempts, hint, latency, the mistakes whose
explanations were shown), so later policies (FSRS, mistake remediation) fit the same loop.

Implemented here: SM-2 driven directly (scheduler/sm2.py) with the engine's rules, as
bot/tutor.py `next_card` and `_finish` apply them:

- due reviews first, most overdue first (due day, then E-Factor, then card id);
- then new cards in deck order while fewer than ``new_per_day`` were met today;
- then rule-7 drills of cards scored below 4 today, oldest review first; a drill moves no
  SM-2 state, only whether the card still needs a drill (its own quality below 4).

Two grade maps: "sm2-ours", scheduler/grading.py's `quality_for` (only a first try shows
recall); "sm2-naive", any correct answer within the attempts passes (quality 4), else 1.
`bot.sim.engine_policy` runs the real engine behind the same interface; a test holds the two
to the same decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.sim.deck import SimCard
from bot.sim.learner import Answer
from scheduler.grading import needs_drill, quality_for
from scheduler.sm2 import NEW, SM2State, review

__all__ = ["POLICIES", "GradeMap", "Pick", "Policy", "SM2Policy", "Schedule", "naive_quality"]

GradeMap = Callable[[bool, int, bool, int], int]  # (correct, attempts, hint, latency) -> q


@dataclass(frozen=True, slots=True)
class Pick:
    card_id: str
    kind: str  # new | review | drill


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


@dataclass(slots=True)
class _State:
    sm2: SM2State
    due: int
    last_day: int
    last_at: tuple[int, int]  # (day, ms) of the last scheduled review: drill order
    drill_pending: bool


class SM2Schedule:
    def __init__(self, cards: list[SimCard], new_per_day: int, grade: GradeMap):
        self.order = [card.id for card in cards]
        self.new_per_day = new_per_day
        self.grade = grade
        self.states: dict[str, _State] = {}
        self.new_on: tuple[int, int] = (-1, 0)  # (day, new cards met that day)

    def next_card(self, day: int, at_ms: int) -> Pick | None:
        states = self.states
        due = [(s.due, s.sm2.ef100, cid) for cid, s in states.items() if s.due <= day]
        if due:
            return Pick(min(due)[2], "review")
        met = self.new_on[1] if self.new_on[0] == day else 0
        if met < self.new_per_day and len(states) < len(self.order):
            return Pick(next(c for c in self.order if c not in states), "new")
        drills = [(s.last_at, cid) for cid, s in states.items()
                  if s.drill_pending and s.last_day == day]
        if drills:
            return Pick(min(drills)[1], "drill")
        return None

    def record(self, day: int, at_ms: int, pick: Pick, card: SimCard,
               answer: Answer) -> int:
        quality = self.grade(answer.correct, answer.attempts, answer.hint_used,
                             answer.latency_ms)
        drill = needs_drill(quality)
        if pick.kind == "drill":
            self.states[pick.card_id].drill_pending = drill
            return quality
        state = self.states.get(pick.card_id)
        after = review(NEW if state is None else state.sm2, quality)
        done_at = (day, at_ms + answer.duration_ms)
        self.states[pick.card_id] = _State(after, day + after.interval, day, done_at, drill)
        if pick.kind == "new":
            met = self.new_on[1] if self.new_on[0] == day else 0
            self.new_on = (day, met + 1)
        return quality


@dataclass(frozen=True)
class SM2Policy:
    name: str
    grade: GradeMap
    description: str

    def schedule(self, cards: list[SimCard], new_per_day: int, key: str) -> SM2Schedule:
        return SM2Schedule(cards, new_per_day, self.grade)

    def describe(self) -> str:
        return self.description


POLICIES: dict[str, Policy] = {
    "sm2-ours": SM2Policy(
        "sm2-ours", ours_quality,
        "SM-2 (scheduler/sm2.py) with scheduler/grading.py quality_for: first try 5/4/3 by "
        "latency (20 s / 60 s), 2 after a hint, 1 on attempt 2, 0 after; rule-7 drills of "
        "q < 4; due first, then new within new_per_day, then drills"),
    "sm2-naive": SM2Policy(
        "sm2-naive", naive_quality,
        "SM-2 with a naive grade map: correct within 3 attempts = 4 (whatever the attempts, "
        "hint or latency), never correct = 1; same rules and drills as sm2-ours"),
}
