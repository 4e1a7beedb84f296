"""Misconceptions and remedies (scheduler/remediation.py): written with each review, in its
transaction; read for the next card, the remedy bound and /stats."""

from __future__ import annotations

from datetime import date

import sqlalchemy as sa

from scheduler.storage.db import DriverConnections, Queries, upsert_insert
from scheduler.storage.models import CardState, Misconception, ReviewLog
from scheduler.storage.prepared import Prepared

misconception_t = Misconception.__table__
state_t = CardState.__table__
log_t = ReviewLog.__table__


def _key(table: sa.Table, *names: str):
    return [table.c[n] == sa.bindparam(f"k_{n}") for n in names]


class MisconceptionQueries(Queries):
    """`store.misconceptions`. Its writes run in the answer's transaction (Store.record),
    as statements compiled once."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        dialect = engine.dialect
        c = misconception_t.c
        shown = upsert_insert(misconception_t, dialect.name)
        # A conflict is the learner showing it again: reopen and count (one statement, so
        # two answers at once never collide).
        self._show_mistake = Prepared(shown.on_conflict_do_update(
            index_elements=["learner_id", "deck_id", "mistake_id"],
            set_={"open": sa.true(), "times_shown": c.times_shown + 1,
                  "last_shown_at": shown.excluded.last_shown_at}), dialect,
            ["learner_id", "deck_id", "mistake_id", "open", "times_shown",
             "first_shown_at", "last_shown_at"])
        self._correct_mistake = Prepared(misconception_t.update().where(
            *_key(misconception_t, "learner_id", "deck_id", "mistake_id"), c.open.is_(True))
            .values(open=False, last_corrected_at=sa.bindparam(
                "at", type_=c.last_corrected_at.type)), dialect, [])
        self._set_remedy = Prepared(state_t.update().where(
            *_key(state_t, "learner_id", "card_id"), state_t.c.remedy_day.is_(None))
            .values(remedy_day=sa.bindparam("day", type_=sa.Date())), dialect, [])

    def record_answer(self, cursor, r) -> None:
        """Write the answer's shown and corrected mistakes, and the remedies it set, on
        the answer's cursor (in its transaction)."""
        for mistake in r.mistake_ids:
            self._show_mistake(cursor, {
                "learner_id": r.learner_id, "deck_id": r.deck_id, "mistake_id": mistake,
                "open": True, "times_shown": 1, "first_shown_at": r.reviewed_at,
                "last_shown_at": r.reviewed_at})
        for mistake in r.corrected:
            self._correct_mistake(cursor, {"k_learner_id": r.learner_id,
                                           "k_deck_id": r.deck_id, "k_mistake_id": mistake,
                                           "at": r.reviewed_at})
        for card_id in r.remedies:
            self._set_remedy(cursor, {"k_learner_id": r.learner_id, "k_card_id": card_id,
                                      "day": r.remedy_day})

    def for_learner(self, learner_id: int) -> list[Misconception]:
        """Every misconception the learner showed: open ones first, most recent first."""
        c = misconception_t.c
        query = (sa.select(misconception_t).where(c.learner_id == learner_id)
                 .order_by(c.open.desc(), c.last_shown_at.desc(), c.mistake_id))
        with self.engine.connect() as conn:
            return [Misconception.model_validate(r._mapping) for r in conn.execute(query)]

    def open_for(self, learner_id: int) -> set[tuple[str, str]]:
        """(deck id, mistake id) of the learner's open misconceptions."""
        c = misconception_t.c
        query = sa.select(c.deck_id, c.mistake_id).where(c.learner_id == learner_id, c.open)
        with self.engine.connect() as conn:
            return {(deck, mistake) for deck, mistake in conn.execute(query)}

    def remedies_used(self, learner_id: int, day: date) -> int:
        """Remedies pending for ``day`` or later plus those served on ``day`` (the daily
        bound; one left pending from an earlier day, e.g. in a deck this server does not
        play, blocks nothing)."""
        pending = sa.select(sa.func.count()).where(
            state_t.c.learner_id == learner_id, state_t.c.remedy_day >= day)
        served = sa.select(sa.func.count()).where(
            log_t.c.learner_id == learner_id, log_t.c.study_day == day,
            log_t.c.kind == "remedy")
        with self.engine.connect() as conn:
            return conn.execute(pending).scalar_one() + conn.execute(served).scalar_one()
