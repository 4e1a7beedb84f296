"""The real engine behind the simulation's `Schedule` interface: `Tutor.next_card`,
`Tutor.hint` and `Tutor.answer` on a SQLite database, with a clock the simulation moves.

It runs a policy exactly as the product does (the scheduler and remediation given as the
one-off choices `tutor practice --scheduler --remediation` makes), at about a millisecond
an answer: too slow for the default benchmark, so tests hold the direct driver
(bot.bench.sim.policies) to the same decisions on a small run.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import build
from bot.bench.sim.deck import SimCard
from bot.bench.sim.learner import Answer
from bot.engine import Engine
from content.loader import DeckLibrary
from scheduler.next_card import Pick
from scheduler.storage.db import sqlite_url

__all__ = ["EnginePolicy"]

# Day 0's session starts at noon UTC; learners keep the default UTC calendar (rollover 4:00).
DAY0 = datetime(2026, 1, 5, 12, tzinfo=UTC)


class _Clock:
    def __init__(self) -> None:
        self.now = DAY0

    def set(self, day: int, at_ms: int) -> None:
        self.now = DAY0 + timedelta(days=day, milliseconds=at_ms)

    def __call__(self) -> datetime:
        return self.now


class EngineSchedule:
    def __init__(self, engine: Engine, clock: _Clock, key: str, new_per_day: int,
                 choice: dict):
        self.tutor, self.clock, self.choice = engine.tutor, clock, choice
        learner = self.tutor.learner(key)
        if learner.new_per_day != new_per_day:
            learner = engine.learners.update_settings(learner, {"new_per_day": new_per_day})
        self.learner = learner
        self.served = None

    def next_card(self, day: int, at_ms: int) -> Pick | None:
        self.clock.set(day, at_ms)
        self.served = self.tutor.next_card(self.learner, **self.choice)
        return None if self.served is None else Pick(self.served.card_id, self.served.kind)

    def record(self, day: int, at_ms: int, pick: Pick, card: SimCard,
               answer: Answer) -> int | None:
        served = self.served
        assert served is not None and served.card_id == pick.card_id
        if answer.hint_used:
            served, _ = self.tutor.hint(served)
        t = at_ms
        for picks, wait in zip(answer.picks, answer.waits_ms, strict=True):
            t += wait
            self.clock.set(day, t)
            verdict = self.tutor.answer(served, card.response(picks))
            served = verdict.served
        if not verdict.finished or verdict.correct != answer.correct:
            raise AssertionError(f"engine and simulation disagree on {pick.card_id}")
        self.served = None
        return verdict.quality


class EnginePolicy:
    """A policy through bot.engine.tutor.Tutor on its own SQLite file in ``folder``: SM-2 or FSRS
    with the product's grade map, remediation on or off."""

    def __init__(self, folder: Path, library: DeckLibrary | None = None,
                 scheduler: str = "sm2", remediation: bool = False):
        self.name = scheduler.replace("sm2", "sm2-ours") + ("+remediation" * remediation)
        self.choice = {"scheduler": scheduler, "remediation": remediation}
        self.clock = _Clock()
        self.app = build(database_url=sqlite_url(Path(folder) / "learning.db"),
                         library=library, clock=self.clock, sandbox=False)
        self.tutor = self.app.tutor

    def schedule(self, cards: list[SimCard], new_per_day: int, key: str) -> EngineSchedule:
        servable = [c.id for c in self.tutor.servable()]
        if servable != [c.id for c in cards]:
            raise ValueError("the engine serves other cards than the simulation's")
        return EngineSchedule(self.app.engine, self.clock, key, new_per_day, self.choice)

    def describe(self) -> str:
        return f"{self.name} through bot.engine.tutor.Tutor on SQLite"

    def close(self) -> None:
        self.app.close()
