"""Which card next: the order a study day serves a learner's cards in, written once for the
engine (bot/engine/tutor.py `Tutor.next_card`) and the learning simulator
(bot/bench/sim/policies.py). A pure rule on plain values.

In the default mode (`auto`) a study day serves:

- due reviews first: cards whose content changed since they were reviewed (`relearn`), then
  the most overdue, ties to the card at more risk (`risk`: lower E-Factor under SM-2, lower
  stability under FSRS), then card id;
- then new cards while the day's limit allows: deck order, or with remediation those testing
  an open misconception first (scheduler/remediation.py `new_card_order`);
- then, with remediation, remedies due by today (remedy day, card id);
- then rule-7 drills of cards scored below 4 today, oldest review first.

`review` serves all but new cards, `learn` only new cards; `practice` serves due reviews,
then anything: an unseen card (new while the limit allows, else cram), else the card
reviewed longest ago (cram). Days are whatever the caller counts in (dates in the engine,
study-day numbers in the simulator), as long as they compare.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal, NamedTuple, Protocol

from scheduler.remediation import new_card_order

__all__ = ["Met", "MetCard", "Mode", "Pick", "pick_next"]

Mode = Literal["auto", "review", "learn", "practice"]
Day = date | int  # a study day: a date, or a day number counted from the first


@dataclass(frozen=True, slots=True)
class Pick:
    card_id: str
    kind: str  # new | review | remedy | drill | cram


class Met(Protocol):
    """What the order reads of a card the learner has met."""

    @property
    def due_day(self) -> Day: ...  # under the scheduler in force
    @property
    def risk(self) -> float: ...  # among cards due the same day, the lowest comes first
    @property
    def relearn(self) -> bool: ...  # changed since reviewed: due now, starting over
    @property
    def last_day(self) -> Day: ...  # the study day of its last review
    @property
    def last_at(self) -> datetime | tuple[int, int]: ...  # when: drills and cram by it
    @property
    def drill_pending(self) -> bool: ...
    @property
    def remedy(self) -> Day | None: ...  # the day of its pending remedy


class MetCard(NamedTuple):
    """A `Met` as plain values, for callers whose records name them otherwise."""

    due_day: Day
    risk: float
    relearn: bool
    last_day: Day
    last_at: datetime
    drill_pending: bool
    remedy: Day | None


def pick_next(met: Mapping[str, Met], unseen: Sequence[str], today: Day, *,
              new_left: int | Callable[[], int],
              mode: Mode = "auto", remediation: bool = False,
              tests: Mapping[str, Collection[str]] | None = None,
              open_mistakes: Collection[str] = ()) -> Pick | None:
    """The card to serve next and why, or None when the day (in this mode) is done.

    `met`: the learner's met cards by id; `unseen`: the others, in deck order; `new_left`:
    new cards the day still allows, or a function asked only when a new card could come
    next (at most once: the engine's costs a query); `tests` and `open_mistakes` (with
    remediation): the mistake ids each unseen card tests, and the learner's open
    misconceptions."""
    if mode != "learn":
        due = [(not m.relearn, m.due_day, m.risk, card_id) for card_id, m in met.items()
               if m.relearn or m.due_day <= today]
        if due:
            return Pick(min(due)[3], "review")
    if mode in ("auto", "learn") and unseen and _count(new_left) > 0:
        if remediation:
            unseen = new_card_order(list(unseen), tests or {}, open_mistakes)
        return Pick(unseen[0], "new")
    if mode in ("auto", "review"):
        if remediation:
            remedies = [(m.remedy, card_id) for card_id, m in met.items()
                        if m.remedy is not None and m.remedy <= today]
            if remedies:
                return Pick(min(remedies)[1], "remedy")
        drills = [(m.last_at, card_id) for card_id, m in met.items()
                  if m.drill_pending and m.last_day == today]
        if drills:
            return Pick(min(drills)[1], "drill")
    if mode == "practice":
        if unseen:
            return Pick(unseen[0], "new" if _count(new_left) > 0 else "cram")
        if met:
            return Pick(min((m.last_at, card_id) for card_id, m in met.items())[1], "cram")
    return None


def _count(new_left: int | Callable[[], int]) -> int:
    return new_left() if callable(new_left) else new_left
