"""Served cards kept between requests (Discord): their attempt state and select-menu
drafts. The engine (`bot.engine.served_cards`) is their only user."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from scheduler.storage.db import DriverConnections, Queries
from scheduler.storage.models import CommunityDeck, Learner, ServedCard
from scheduler.storage.prepared import Prepared, PreparedSelect

served_t = ServedCard.__table__
learner_t = Learner.__table__
deck_t = CommunityDeck.__table__


def advance_statement(deck: bool = False) -> sa.Update:
    """Store a served card's next attempt state unless another click got there first, and
    with `deck` (a stored deck's card) unless that deck moved past the version the card was
    judged on, or was removed: one primary-key probe in the same statement, no round trip.
    A bundled deck's card gets no probe (PostgreSQL's planning of it: ~15 us a click)."""
    update = (
        served_t.update()
        .where(served_t.c.serve_id == sa.bindparam("k_serve"),
               served_t.c.attempts == sa.bindparam("k_attempts"),
               served_t.c.finished.is_(False))
        .values(served=sa.bindparam("served", type_=served_t.c.served.type),
                attempts=sa.bindparam("attempts", type_=sa.Integer()),
                finished=sa.bindparam("finished", type_=sa.Boolean()),
                draft=sa.bindparam("draft", type_=served_t.c.draft.type))
    )
    if not deck:
        return update
    return update.where(~sa.exists().where(
        deck_t.c.deck_id == sa.bindparam("k_deck", type_=deck_t.c.deck_id.type),
        sa.or_(deck_t.c.version != sa.bindparam("k_version", type_=sa.Integer()),
               deck_t.c.removed)))


def moves(served: dict) -> int:
    """The `attempts` column: every stored move of a served card (its attempts, its free
    code retries and its hint), the version each compare-and-set guards."""
    return served["attempts"] + served.get("retries", 0) + bool(served.get("hint_used"))


def advance_values(advance) -> dict:
    return {"k_serve": advance.serve_id, "k_attempts": advance.attempts,
            "served": advance.served, "attempts": moves(advance.served),
            "finished": advance.finished, "draft": {},
            "k_deck": advance.deck_id, "k_version": advance.deck_version}


def _keeping_draft(deck: bool) -> sa.Update:
    return advance_statement(deck).values(draft=served_t.c.draft)


class ServedQueries(Queries):
    """`store.served`. Every click saves, loads or advances one: prepared statements on the
    hot path's connections (scheduler/storage/prepared.py)."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        d = engine.dialect
        self._insert = Prepared(served_t.insert(), d, [
            "serve_id", "learner_id", "served", "attempts", "draft", "finished", "served_at"])
        # With its learner's external id (`owner`): a click needs no learner lookup.
        self._load = PreparedSelect(
            sa.select(served_t, learner_t.c.external_id.label("owner"))
            .join(learner_t, learner_t.c.id == served_t.c.learner_id)
            .where(served_t.c.serve_id == sa.bindparam("serve_id")), d)
        # By (clear the draft, check the deck's version).
        self._advance = {(True, deck): Prepared(advance_statement(deck), d, [])
                         for deck in (False, True)} | {
                         (False, deck): Prepared(_keeping_draft(deck), d, [])
                         for deck in (False, True)}

    def save(self, serve_id: str, learner_id: int, served: dict, at: datetime) -> None:
        self.write(self._insert, {
            "serve_id": serve_id, "learner_id": learner_id, "served": served,
            "attempts": moves(served), "draft": {}, "finished": False, "served_at": at})

    def load(self, serve_id: str):
        """The served card's row (a ServedCard's fields and its learner's external id,
        `owner`; read-only), or None."""
        rows = self.read(self._load, {"serve_id": serve_id})
        return rows[0] if rows else None

    def advance(self, advance) -> bool:
        """Store the next attempt state unless another click got there first."""
        return bool(self.write(_statement(self._advance, advance), advance_values(advance)))

    def advance_in(self, cursor, advance) -> bool:
        """`advance` inside the caller's transaction (an answer's, `Store.record`)."""
        return bool(_statement(self._advance, advance)(cursor, advance_values(advance)))

    def set_draft(self, serve_id: str, blank_id: str, chip_id: str) -> dict | None:
        """Remember one select-menu pick; the whole draft, or None for a finished card."""
        with self.engine.begin() as conn:
            row = conn.execute(
                sa.select(served_t.c.draft, served_t.c.finished)
                .where(served_t.c.serve_id == serve_id).with_for_update()
            ).first()
            if row is None or row.finished:
                return None
            draft = {**row.draft, blank_id: chip_id}
            conn.execute(served_t.update().where(served_t.c.serve_id == serve_id)
                         .values(draft=draft))
        return draft

    def unfinished(self, learner_id: int, limit: int = 10) -> list[ServedCard]:
        """This learner's unfinished cards, newest first."""
        query = (
            sa.select(served_t)
            .where(served_t.c.learner_id == learner_id, served_t.c.finished.is_(False))
            .order_by(served_t.c.served_at.desc()).limit(limit)
        )
        with self.engine.connect() as conn:
            return [ServedCard(**r._mapping) for r in conn.execute(query)]


def _statement(statements: dict, advance) -> Prepared:
    return statements[advance.clear_draft, advance.deck_id is not None]
