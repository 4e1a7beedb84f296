"""Learners: found or created on first contact, read, changed and forgotten."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from scheduler.storage.db import DriverConnections, Queries, upsert_insert
from scheduler.storage.insights import forget_counts
from scheduler.storage.models import Learner
from scheduler.storage.prepared import PreparedSelect

learner_t = Learner.__table__


class LearnerQueries(Queries):
    """`store.learners`."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        self._by_external_id = PreparedSelect(
            sa.select(learner_t).where(learner_t.c.external_id == sa.bindparam("external_id")),
            engine.dialect)
        self._insert = upsert_insert(learner_t, engine.dialect.name).on_conflict_do_nothing(
            index_elements=["external_id"]
        )

    def get_or_create(self, external_id: str, *, display_name: str = "",
                      now: datetime) -> Learner:
        """The learner with this external id, created on first contact: a read on every
        later click (a prepared statement: a quarter of a click's CPU went to building and
        running it through Core, and validating the row, which the database already did);
        a write only the first time."""
        key = {"external_id": external_id}
        rows = self.read(self._by_external_id, key)
        if not rows:
            fresh = Learner(external_id=external_id, display_name=display_name, created_at=now)
            with self.engine.begin() as conn:  # two first contacts at once: one row
                conn.execute(self._insert, fresh.model_dump(exclude={"id"}))
            rows = self.read(self._by_external_id, key)
        return Learner.model_construct(**rows[0]._asdict())

    def find(self, external_id: str) -> Learner | None:
        """The learner with this external id, if they ever played (nothing is created)."""
        rows = self.read(self._by_external_id, {"external_id": external_id})
        return Learner.model_construct(**rows[0]._asdict()) if rows else None

    def get(self, learner_id: int) -> Learner | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(learner_t).where(learner_t.c.id == learner_id)).first()
        return None if row is None else Learner.model_validate(row._mapping)

    def update(self, learner_id: int, **values) -> None:
        unknown = set(values) - set(learner_t.c.keys()) | ({"id", "external_id"} & set(values))
        if unknown:
            raise ValueError(f"cannot update learner fields: {sorted(unknown)}")
        with self.engine.begin() as conn:
            conn.execute(learner_t.update().where(learner_t.c.id == learner_id).values(**values))

    def delete(self, learner_id: int) -> None:
        """Forget a learner: states, logs and memberships go with them (ON DELETE CASCADE),
        and the insight counts of the servers they played in (counted again without them)."""
        with self.engine.begin() as conn:
            forget_counts(conn, learner_id)
            conn.execute(learner_t.delete().where(learner_t.c.id == learner_id))
