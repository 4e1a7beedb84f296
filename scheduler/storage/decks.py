"""Decks uploaded by servers (issue 15): the current row per deck id and every version.

An upload is one transaction: the deck row (a new id, or a compare-and-set on the version
it was checked against), the version row and the uploading server's enabled decks. A
crash in the middle leaves nothing; a concurrent upload of the same id loses cleanly.

The decks a server plays are rows (`guild_deck`), each change one row's insert or delete
under the lock of the server's settings row, taken by the change's first statement to it
(a write, so SQLite takes its write lock there): concurrent uploads, enables and disables
of one server run one after another, each on what the last one left.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from scheduler.storage.db import DriverConnections, Queries, upsert_insert
from scheduler.storage.models import (
    CommunityDeck,
    CommunityDeckVersion,
    GuildDeck,
    GuildSettings,
)
from scheduler.storage.prepared import PreparedSelect

deck_t = CommunityDeck.__table__
version_t = CommunityDeckVersion.__table__
played_t = GuildDeck.__table__
_guild_t = GuildSettings.__table__


class DeckTaken(Exception):
    """Another upload stored this deck id (or version) first; nothing was stored."""


class NoDeckLeft(Exception):
    """The change would leave the server no deck it can play; nothing was changed."""


class DeckGone(Exception):
    """The deck was removed or unshared before it could be enabled; nothing was changed."""


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
    default: tuple[str, ...]  # the decks a server plays until its admins choose


class DeckQueries(Queries):
    """`store.decks`."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        # Every serve in a server asks what it plays: prepared (scheduler/storage/prepared.py).
        self._played = PreparedSelect(
            sa.select(_guild_t.c.decks_chosen, played_t.c.deck_id)
            .select_from(_guild_t.outerjoin(played_t, played_t.c.guild_id == _guild_t.c.guild_id))
            .where(_guild_t.c.guild_id == sa.bindparam("guild_id"))
            .order_by(played_t.c.deck_id), engine.dialect)

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
                _choose(conn, v.guild_id, v.deck_id, True, v.default)
        except sa.exc.IntegrityError:
            raise DeckTaken(v.deck_id) from None
        return version

    def _insert_version(self, conn: sa.Connection, v: NewVersion, version: int) -> None:
        conn.execute(version_t.insert().values(
            deck_id=v.deck_id, version=version, yaml=v.yaml, uploaded_by=v.uploaded_by,
            uploaded_at=v.at))

    def played(self, guild_id: int) -> list[str] | None:
        """The deck ids this server's admins chose, sorted; None: the default decks. (One
        statement: a snapshot, never a choice half-read beside a change.)"""
        rows = self.read(self._played, {"guild_id": guild_id})
        if not rows or not rows[0].decks_chosen:
            return None
        return [row.deck_id for row in rows if row.deck_id is not None]

    def choose(self, guild_id: int, deck_id: str, on: bool, default: tuple[str, ...],
               playable: set[str]) -> list[str] | None:
        """Play the deck here or not, on what the server plays now (not on what a caller
        read before). NoDeckLeft, changing nothing, if none of `playable` would be left;
        DeckGone if a stored deck to enable is removed or not shared with this server.
        Returns what the server plays afterwards, as `played` does."""
        with self.engine.begin() as conn:
            after = _choose(conn, guild_id, deck_id, on, default)
            if not playable & set(default if after is None else after):
                raise NoDeckLeft(deck_id)
        return after

    def update(self, deck_id: str, guild_id: int, now: datetime,
               **values) -> bool:
        """Set `public` or `removed` on a deck this guild owns; False if it owns none.
        Removing ends sharing too. Removing or unsharing ends every other server's choice
        of the deck (removing, the owner's as well), so it never comes back by itself."""
        if set(values) - {"public", "removed"}:
            raise ValueError(f"cannot update a stored deck's {sorted(values)}")
        if values.get("removed"):
            values["public"] = False
        with self.engine.begin() as conn:
            done = conn.execute(deck_t.update().where(
                deck_t.c.deck_id == deck_id, deck_t.c.owner_guild_id == guild_id,
            ).values(**values, changes=deck_t.c.changes + 1, updated_at=now))
            if done.rowcount == 1 and values.get("public") is False:
                _drop_everywhere(conn, deck_id, None if values.get("removed") else guild_id)
        return done.rowcount == 1


def _lock_guild(conn: sa.Connection, guild_id: int) -> bool:
    """Lock the server's settings row (made with its defaults if new); its decks_chosen."""
    insert = upsert_insert(_guild_t, conn.dialect.name)
    conn.execute(insert.values(guild_id=guild_id, decks_chosen=False).on_conflict_do_update(
        index_elements=["guild_id"], set_={"decks_chosen": _guild_t.c.decks_chosen}))
    return bool(conn.execute(sa.select(_guild_t.c.decks_chosen)
                             .where(_guild_t.c.guild_id == guild_id)).scalar())


def _choose(conn: sa.Connection, guild_id: int, deck_id: str, on: bool,
            default: tuple[str, ...]) -> list[str] | None:
    """One deck on or off for one server, in the caller's transaction. A choice equal to
    the default decks is stored as no choice, so a deck bundled later reaches it too."""
    chosen = _lock_guild(conn, guild_id)
    if on and deck_id not in default:
        # Shared-locks the deck row: a removal or unsharing waits for this to commit (and
        # then drops the row written here) or this sees it done.
        row = conn.execute(sa.select(deck_t.c.owner_guild_id, deck_t.c.public,
                                     deck_t.c.removed).where(deck_t.c.deck_id == deck_id)
                           .with_for_update(read=True)).first()
        if row is not None and (row.removed or not (row.public
                                                    or row.owner_guild_id == guild_id)):
            raise DeckGone(deck_id)
    if not chosen:
        if (deck_id in default) == on:
            return None
        conn.execute(_guild_t.update().where(_guild_t.c.guild_id == guild_id)
                     .values(decks_chosen=True))
        conn.execute(played_t.insert(), [{"guild_id": guild_id, "deck_id": d}
                                         for d in default])
    conn.execute(played_t.delete().where(played_t.c.guild_id == guild_id,
                                         played_t.c.deck_id == deck_id))
    if on:
        conn.execute(played_t.insert().values(guild_id=guild_id, deck_id=deck_id))
    after = list(conn.execute(sa.select(played_t.c.deck_id).where(
        played_t.c.guild_id == guild_id).order_by(played_t.c.deck_id)).scalars())
    if set(after) != set(default):
        return after
    conn.execute(played_t.delete().where(played_t.c.guild_id == guild_id))
    conn.execute(_guild_t.update().where(_guild_t.c.guild_id == guild_id)
                 .values(decks_chosen=False))
    return None


def _drop_everywhere(conn: sa.Connection, deck_id: str, except_guild: int | None) -> None:
    """No server (but `except_guild`) plays the deck any more; a server left with none
    plays the default decks, as a new server does. Settings rows are locked in one order."""
    guilds = sa.select(played_t.c.guild_id).where(played_t.c.deck_id == deck_id)
    if except_guild is not None:
        guilds = guilds.where(played_t.c.guild_id != except_guild)
    ids = sorted(conn.execute(guilds).scalars())
    for guild_id in ids:
        _lock_guild(conn, guild_id)
    if not ids:
        return
    conn.execute(played_t.delete().where(played_t.c.deck_id == deck_id,
                                         played_t.c.guild_id.in_(ids)))
    left = sa.select(played_t.c.guild_id).where(played_t.c.guild_id == _guild_t.c.guild_id)
    conn.execute(_guild_t.update().where(_guild_t.c.guild_id.in_(ids), ~sa.exists(left))
                 .values(decks_chosen=False))
