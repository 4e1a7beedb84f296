"""Servers: their settings, and which learners were seen in them."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from scheduler.choice import ServerChoice
from scheduler.storage.db import DriverConnections, Queries, upsert_insert
from scheduler.storage.models import GuildMember, GuildSettings
from scheduler.storage.prepared import Prepared, PreparedSelect

member_t = GuildMember.__table__
guild_t = GuildSettings.__table__


class ServerQueries(Queries):
    """`store.servers`."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        d = engine.dialect
        member = upsert_insert(member_t, d.name)
        # Every serve in a server writes it, and every serve reads the server's choice:
        # prepared statements (scheduler/storage/prepared.py).
        self._upsert_member = Prepared(member.on_conflict_do_update(
            index_elements=["guild_id", "learner_id"],
            set_={"last_seen_at": member.excluded.last_seen_at},
        ), d, ["guild_id", "learner_id", "first_seen_at", "last_seen_at"])
        chosen = sa.select(guild_t.c.scheduler, guild_t.c.remediation, guild_t.c.fsrs_version)
        self._choice_here = PreparedSelect(
            chosen.where(guild_t.c.guild_id == sa.bindparam("guild_id")), d)
        # Outside a server: the one used last (a server that never changed a setting has
        # no row: its defaults).
        self._choice_last = PreparedSelect(
            chosen.select_from(member_t.outerjoin(
                guild_t, member_t.c.guild_id == guild_t.c.guild_id))
            .where(member_t.c.learner_id == sa.bindparam("learner_id"))
            .order_by(member_t.c.last_seen_at.desc(), member_t.c.guild_id).limit(1), d)

    def note_visit(self, guild_id: int, learner_id: int, now: datetime) -> None:
        """The learner was active in this server now (a membership, first and last seen)."""
        self.write(self._upsert_member, {"guild_id": guild_id, "learner_id": learner_id,
                                         "first_seen_at": now, "last_seen_at": now})

    def settings(self, guild_id: int) -> GuildSettings:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(guild_t).where(guild_t.c.guild_id == guild_id)).first()
        return GuildSettings(guild_id=guild_id) if row is None else GuildSettings(**row._mapping)

    def update_settings(self, guild_id: int, **values) -> GuildSettings:
        current = self.settings(guild_id).model_dump()
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

    def known(self, guild_ids) -> set[int]:
        """Of these servers, those the bot was used in or configured for."""
        ids = [int(g) for g in guild_ids]
        if not ids:
            return set()
        used = sa.select(member_t.c.guild_id).where(member_t.c.guild_id.in_(ids))
        set_up = sa.select(guild_t.c.guild_id).where(guild_t.c.guild_id.in_(ids))
        with self.engine.connect() as conn:
            return set(conn.execute(sa.union(used, set_up)).scalars())

    def last_guild(self, learner_id: int) -> int | None:
        """The server this learner used most recently (None: never used one); the same
        order as `choice` reads outside a server."""
        query = (sa.select(member_t.c.guild_id).where(member_t.c.learner_id == learner_id)
                 .order_by(member_t.c.last_seen_at.desc(), member_t.c.guild_id).limit(1))
        with self.engine.connect() as conn:
            return conn.execute(query).scalar()

    def choice(self, learner_id: int, guild_id: int | None) -> ServerChoice:
        """What the server chose: ``guild_id``'s, or outside a server (DMs, reminders) the
        one the learner used most recently."""
        rows = self.read(self._choice_here, {"guild_id": guild_id}) if guild_id is not None \
            else self.read(self._choice_last, {"learner_id": learner_id})
        return ServerChoice(*rows[0]) if rows else ServerChoice()
