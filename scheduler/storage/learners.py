"""Learners, their server memberships and servers' settings: reads and small writes."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from scheduler.storage.db import upsert_insert
from scheduler.storage.models import GuildMember, GuildSettings, Learner

learner_t = Learner.__table__
member_t = GuildMember.__table__
guild_t = GuildSettings.__table__


class LearnerQueries:
    """Mixed into Store (which provides `engine`)."""

    engine: sa.Engine

    def _prepare_learners(self, dialect: str) -> None:
        self._insert_learner = upsert_insert(learner_t, dialect).on_conflict_do_nothing(
            index_elements=["external_id"]
        )
        member = upsert_insert(member_t, dialect)
        self._upsert_member = member.on_conflict_do_update(
            index_elements=["guild_id", "learner_id"],
            set_={"last_seen_at": member.excluded.last_seen_at},
        )

    def learner(self, external_id: str, *, display_name: str = "", now: datetime) -> Learner:
        """Get the learner with this external id, creating them on first contact: a read
        on every later click; a write only the first time."""
        query = sa.select(learner_t).where(learner_t.c.external_id == external_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            fresh = Learner(external_id=external_id, display_name=display_name, created_at=now)
            with self.engine.begin() as conn:  # two first contacts at once: one row
                conn.execute(self._insert_learner, fresh.model_dump(exclude={"id"}))
                row = conn.execute(query).one()
        return Learner.model_validate(row._mapping)

    def get_learner(self, learner_id: int) -> Learner | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(learner_t).where(learner_t.c.id == learner_id)).first()
        return None if row is None else Learner.model_validate(row._mapping)

    def update_learner(self, learner_id: int, **values) -> None:
        unknown = set(values) - set(learner_t.c.keys()) | ({"id", "external_id"} & set(values))
        if unknown:
            raise ValueError(f"cannot update learner fields: {sorted(unknown)}")
        with self.engine.begin() as conn:
            conn.execute(learner_t.update().where(learner_t.c.id == learner_id).values(**values))

    def delete_learner(self, learner_id: int) -> None:
        """Forget a learner: states, logs and memberships go with them (ON DELETE CASCADE)."""
        with self.engine.begin() as conn:
            conn.execute(learner_t.delete().where(learner_t.c.id == learner_id))

    def touch_guild(self, guild_id: int, learner_id: int, now: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                self._upsert_member,
                {"guild_id": guild_id, "learner_id": learner_id,
                 "first_seen_at": now, "last_seen_at": now},
            )

    def guild_settings(self, guild_id: int) -> GuildSettings:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(guild_t).where(guild_t.c.guild_id == guild_id)).first()
        return GuildSettings(guild_id=guild_id) if row is None else GuildSettings(**row._mapping)

    def update_guild_settings(self, guild_id: int, **values) -> GuildSettings:
        current = self.guild_settings(guild_id).model_dump()
        unknown = set(values) - set(current) | ({"guild_id"} & set(values))
        if unknown:
            raise ValueError(f"cannot update guild settings: {sorted(unknown)}")
        row = {**current, **values}
        with self.engine.begin() as conn:
            statement = upsert_insert(guild_t, conn.dialect.name)
            conn.execute(statement.on_conflict_do_update(
                index_elements=["guild_id"],
                set_={k: statement.excluded[k] for k in values} or {"guild_id": guild_id},
            ), row)
        return GuildSettings(**row)

    def server_choice(self, learner_id: int,
                      guild_id: int | None) -> tuple[str | None, bool | None]:
        """(scheduler, remediation) chosen by the server: ``guild_id``'s, or outside a
        server (DMs, reminders) the one the learner used most recently."""
        query = sa.select(guild_t.c.scheduler, guild_t.c.remediation)
        if guild_id is not None:
            query = query.where(guild_t.c.guild_id == guild_id)
        else:  # a server that never changed a setting has no row: its defaults
            query = (query.select_from(member_t.outerjoin(
                guild_t, member_t.c.guild_id == guild_t.c.guild_id))
                .where(member_t.c.learner_id == learner_id)
                .order_by(member_t.c.last_seen_at.desc(), member_t.c.guild_id).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return (None, None) if row is None else (row.scheduler, row.remediation)
