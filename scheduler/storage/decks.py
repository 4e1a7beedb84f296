"""Decks uploaded by servers (issue 15): the current row per deck id and every version.

An upload is one transaction: the deck row (a new id, or a compare-and-set on the version
it was checked against), the version row and the uploading server's enabled decks. A
crash in the middle leaves nothing; a concurrent upload of the same id loses cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from scheduler.storage.db import Queries, upsert_insert
from scheduler.storage.models import CommunityDeck, CommunityDeckVersion, GuildSettings

deck_t = CommunityDeck.__table__
version_t = CommunityDeckVersion.__table__
_guild_t = GuildSettings.__table__


class DeckTaken(Exception):
    """Another upload stored this deck id (or version) first; nothing was stored."""


@dataclass(frozen=True, slots=True)
class NewVersion:
    deck_id: str
    guild_id: int
    expected: int  # the version the upload was checked against; 0 for a new deck id
    yaml: str
    title: str
    cards: int
    uploaded_by: str
    at: datetime
    enabled: list[str] | None  # the uploading server's decks afterwards (None: bundled)


class DeckQueries(Queries):
    """`store.decks`."""

    def get(self, deck_id: str) -> sa.Row | None:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(deck_t).where(deck_t.c.deck_id == deck_id)).first()

    def all(self) -> list[sa.Row]:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(deck_t).order_by(deck_t.c.deck_id)).all()

    def yaml(self, deck_id: str, version: int) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(version_t.c.yaml).where(
                version_t.c.deck_id == deck_id, version_t.c.version == version)).scalar()

    def versions(self, deck_id: str) -> list[sa.Row]:
        """Every stored version, oldest first (history: the YAML is not loaded)."""
        with self.engine.connect() as conn:
            return conn.execute(
                sa.select(version_t.c.version, version_t.c.uploaded_by,
                          version_t.c.uploaded_at)
                .where(version_t.c.deck_id == deck_id).order_by(version_t.c.version)).all()

    def stamp(self) -> tuple[int, int]:
        """Changes when any stored deck does: one cheap aggregate, for other processes."""
        with self.engine.connect() as conn:
            count, total = conn.execute(sa.select(
                sa.func.count(), sa.func.coalesce(sa.func.sum(deck_t.c.changes), 0))).one()
        return int(count), int(total)

    def save_version(self, v: NewVersion) -> int:
        """Store one upload as the deck's next version; DeckTaken if another got there
        first. Returns the version number."""
        version = v.expected + 1
        try:
            with self.engine.begin() as conn:
                if v.expected == 0:
                    conn.execute(deck_t.insert().values(
                        deck_id=v.deck_id, owner_guild_id=v.guild_id, public=False,
                        version=1, title=v.title, cards=v.cards, removed=False, changes=1,
                        created_at=v.at, updated_at=v.at))
                else:
                    moved = conn.execute(deck_t.update().where(
                        deck_t.c.deck_id == v.deck_id, deck_t.c.owner_guild_id == v.guild_id,
                        deck_t.c.version == v.expected,
                    ).values(version=version, title=v.title, cards=v.cards, removed=False,
                             changes=deck_t.c.changes + 1, updated_at=v.at))
                    if moved.rowcount != 1:
                        raise DeckTaken(v.deck_id)
                self._insert_version(conn, v, version)
                self._write_enabled(conn, v.guild_id, v.enabled)
        except sa.exc.IntegrityError:
            raise DeckTaken(v.deck_id) from None
        return version

    def _insert_version(self, conn: sa.Connection, v: NewVersion, version: int) -> None:
        conn.execute(version_t.insert().values(
            deck_id=v.deck_id, version=version, yaml=v.yaml, uploaded_by=v.uploaded_by,
            uploaded_at=v.at))

    def _write_enabled(self, conn: sa.Connection, guild_id: int,
                       enabled: list[str] | None) -> None:
        insert = upsert_insert(_guild_t, conn.dialect.name)
        # A server with no settings row yet gets the columns' defaults.
        conn.execute(insert.values(guild_id=guild_id, decks=enabled)
                     .on_conflict_do_update(index_elements=["guild_id"],
                                            set_={"decks": insert.excluded.decks}))

    def update(self, deck_id: str, guild_id: int, now: datetime,
               **values) -> bool:
        """Set `public` or `removed` on a deck this guild owns; False if it owns none."""
        if set(values) - {"public", "removed"}:
            raise ValueError(f"cannot update a stored deck's {sorted(values)}")
        with self.engine.begin() as conn:
            done = conn.execute(deck_t.update().where(
                deck_t.c.deck_id == deck_id, deck_t.c.owner_guild_id == guild_id,
            ).values(**values, changes=deck_t.c.changes + 1, updated_at=now))
        return done.rowcount == 1
