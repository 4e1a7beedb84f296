"""A served card: the immutable `Served` value the engine hands a front end, with its
attempt state and JSON round trip (kept in memory or in the store between clicks)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from scheduler.choice import DEFAULT_SCHEDULER, SchedulerName
from scheduler.fsrs_review import FSRSState
from scheduler.sm2 import SM2State

Kind = Literal["new", "review", "drill", "remedy", "cram"]


@dataclass(frozen=True, slots=True)
class Served:
    """A card in front of a learner, with the attempts made on it so far."""

    serve_id: str
    learner_id: int
    card_id: str
    card_rev: int
    kind: Kind
    served_at: datetime
    # The SM-2 state when served; the review is refused if it moved meanwhile.
    state: SM2State
    lapses: int
    review_count: int | None  # None: a card the learner has never seen
    attempts: int = 0
    hint_used: bool = False
    # One entry per attempt: an option id, {blank: chip}, or a code check summary.
    chosen: tuple = ()
    guild_id: int | None = None
    # The learner's calendar, so answering needs no extra read.
    timezone: str = "UTC"
    rollover_hour: int = 4
    # Option (or chip) ids in the order shown; () for a card stored before orders were kept.
    order: tuple[str, ...] = ()
    # FSRS's state when served (None: never reviewed), kept beside SM-2's; the scheduler
    # whose due day the learner is told; whether wrong answers bring cards forward.
    fsrs: FSRSState | None = None
    scheduler: SchedulerName = DEFAULT_SCHEDULER
    remediation: bool = False
    restart: bool = False  # the card's content changed: both schedules start over
    # The learner's open misconceptions this card tests: a first try past them corrects them.
    open_mistakes: tuple[str, ...] = ()
    # Code submissions sent again free because they ran no training (not attempts).
    retries: int = 0
    # The FSRS parameter version in force where it was served (0: py-fsrs's defaults).
    fsrs_version: int = 0
    # The code of the last free retry, and the first line of what stopped it: the editor
    # opens on it again (the learner's own text, data only; at most MODAL_TEXT long).
    retry_code: str = ""
    retry_error: str = ""

    @property
    def moves(self) -> int:
        """Attempts, free retries and the hint: the version a stored card's compare-and-set
        guards (a retry or a hint changes no attempt, yet a click judged on the state
        before it must not be stored over it)."""
        return self.attempts + self.retries + self.hint_used

    def next_attempt(self, chosen) -> Served:
        """This card after one more attempt (hot path: a third of dataclasses.replace)."""
        attempt = object.__new__(Served)
        for name in self.__slots__:
            object.__setattr__(attempt, name, getattr(self, name))
        object.__setattr__(attempt, "attempts", self.attempts + 1)
        object.__setattr__(attempt, "chosen", (*self.chosen, chosen))
        return attempt

    def to_json(self) -> dict:
        data = {name: getattr(self, name) for name in self.__slots__}
        data["served_at"] = self.served_at.isoformat()
        data["state"] = [self.state.ef100, self.state.repetitions, self.state.interval]
        data["chosen"] = list(self.chosen)
        data["order"] = list(self.order)
        data["open_mistakes"] = list(self.open_mistakes)
        if self.fsrs is not None:
            data["fsrs"] = [self.fsrs.stability, self.fsrs.difficulty,
                            self.fsrs.last_day.isoformat()]
        return data

    @classmethod
    def from_json(cls, data: dict) -> Served:
        fsrs = data.get("fsrs")
        return cls(**{
            **data,
            "fsrs": None if fsrs is None else FSRSState(fsrs[0], fsrs[1],
                                                        date.fromisoformat(fsrs[2])),
            "scheduler": SchedulerName(data.get("scheduler", DEFAULT_SCHEDULER)),
            "served_at": datetime.fromisoformat(data["served_at"]),
            "state": SM2State(*data["state"]),
            "chosen": tuple(data["chosen"]),
            "order": tuple(data.get("order", ())),
            "open_mistakes": tuple(data.get("open_mistakes", ())),
        })


def new_serve_id(now: datetime) -> str:
    """Time-ordered (like a UUIDv7): new log rows append to the unique index instead of
    landing on random pages, which makes each durable commit cheaper."""
    return f"{int(now.timestamp() * 1000):011x}{secrets.token_hex(6)}"


def preview(card_id: str, card_rev: int, at: datetime) -> Served:
    """A serve nobody answers, for showing a card only: options in the file's order."""
    return Served(serve_id="preview", learner_id=0, card_id=card_id, card_rev=card_rev,
                  kind="new", served_at=at, state=SM2State.new(), lapses=0, review_count=None)
