"""Servers' fitted FSRS parameters (scheduler/server_fit.py): the versions, which one is in
force, the claim that lets one process fit a server at a time, and the reviews a fit reads."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import NamedTuple

import sqlalchemy as sa
from fsrs.scheduler import DEFAULT_PARAMETERS

from scheduler.replay import DEFAULTS, SCHEDULING
from scheduler.storage.db import DriverConnections, Queries, upsert_insert
from scheduler.storage.models import CardState, FSRSParameters, GuildSettings, ReviewLog

fits_t = FSRSParameters.__table__
guild_t = GuildSettings.__table__
log_t = ReviewLog.__table__
state_t = CardState.__table__


class NotApplicable(Exception):
    """That version is not a passed fit of this server, or it is already in force."""


class NothingToRevert(Exception):
    """The server runs the defaults: there is no fit to revert."""


class ServerSize(NamedTuple):
    reviews: int
    first_day: date | None
    last_day: date | None

    @property
    def days(self) -> int:
        """Study days from the first review to the last, both counted."""
        return 0 if self.first_day is None else (self.last_day - self.first_day).days + 1


def _learners_of(guild_id: int):
    """The server's learners: those who reviewed in it. Their whole logs count (a
    learner's memory is theirs, wherever they clicked)."""
    return sa.select(log_t.c.learner_id).where(log_t.c.guild_id == guild_id).distinct()


def _ensure_settings(conn: sa.Connection, guild_id: int) -> None:
    """A settings row for the server, with every default, unless it has one."""
    insert = upsert_insert(guild_t, conn.dialect.name)
    conn.execute(insert.values(GuildSettings(guild_id=guild_id).model_dump())
                 .on_conflict_do_nothing())


def _row(row) -> FSRSParameters:
    return FSRSParameters.model_validate(row._mapping)


class FitQueries(Queries):
    """`store.fits`."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        super().__init__(engine, connections)
        # A version's parameters never change: every process may keep them.
        self._parameters: dict[int, tuple[float, ...]] = {DEFAULTS: tuple(DEFAULT_PARAMETERS)}

    def parameters(self, version: int) -> tuple[float, ...]:
        """A version's 21 parameters (0: py-fsrs's defaults), read once per process."""
        known = self._parameters.get(version)
        if known is None:
            with self.engine.connect() as conn:
                stored = conn.execute(sa.select(fits_t.c.parameters)
                                      .where(fits_t.c.version == version)).scalar()
            if stored is None:
                raise KeyError(f"no FSRS parameter version {version}")
            known = self._parameters[version] = tuple(float(w) for w in stored)
        return known

    # -- what a fit reads ------------------------------------------------------------------

    def servers(self) -> list[int]:
        """Every server with reviews."""
        query = sa.select(log_t.c.guild_id).where(log_t.c.guild_id.is_not(None)).distinct()
        with self.engine.connect() as conn:
            return sorted(conn.execute(query).scalars())

    def size(self, guild_id: int) -> ServerSize:
        """The server's scheduling reviews and the study days they span."""
        c = log_t.c
        query = sa.select(sa.func.count(), sa.func.min(c.study_day), sa.func.max(c.study_day)) \
            .where(c.learner_id.in_(_learners_of(guild_id)), c.kind.in_(SCHEDULING))
        with self.engine.connect() as conn:
            return ServerSize(*conn.execute(query).one())

    def reviews(self, guild_id: int) -> list:
        """The server's scheduling reviews in the order they were recorded: rows of
        (learner_id, card_id, quality, study_day, restart)."""
        c = log_t.c
        query = (sa.select(c.learner_id, c.card_id, c.quality, c.study_day, c.restart)
                 .where(c.learner_id.in_(_learners_of(guild_id)), c.kind.in_(SCHEDULING))
                 .order_by(c.id))
        with self.engine.connect() as conn:
            return conn.execute(query).all()

    def card_states(self, guild_id: int) -> list[tuple[float, float, date, date]]:
        """The FSRS states of the server's learners' cards: (stability, difficulty, last
        review day, due day)."""
        c = state_t.c
        query = sa.select(c.fsrs_stability, c.fsrs_difficulty, c.last_review_day,
                          c.fsrs_due_day).where(c.learner_id.in_(_learners_of(guild_id)),
                                                c.fsrs_stability.is_not(None),
                                                c.fsrs_due_day.is_not(None),
                                                c.last_review_day.is_not(None))
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(query)]

    # -- the versions ----------------------------------------------------------------------

    def in_force(self, guild_id: int) -> int:
        """The version in force in this server (0: the defaults)."""
        with self.engine.connect() as conn:
            return conn.execute(sa.select(guild_t.c.fsrs_version)
                                .where(guild_t.c.guild_id == guild_id)).scalar() or DEFAULTS

    def get(self, version: int) -> FSRSParameters | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(fits_t).where(fits_t.c.version == version)).first()
        return None if row is None else _row(row)

    def history(self, guild_id: int, limit: int = 10) -> list[FSRSParameters]:
        """The server's fits, the newest first."""
        query = (sa.select(fits_t).where(fits_t.c.guild_id == guild_id)
                 .order_by(fits_t.c.version.desc()).limit(limit))
        with self.engine.connect() as conn:
            return [_row(r) for r in conn.execute(query)]

    def save(self, fit: FSRSParameters, *, apply: bool) -> FSRSParameters:
        """Store a fit (its version is new); ``apply``: it is in force from now on."""
        values = fit.model_dump(exclude={"version", "applied_at", "previous_version",
                                         "reverted_at"})
        with self.engine.begin() as conn:
            version = conn.execute(fits_t.insert().values(**values)
                                   .returning(fits_t.c.version)).scalar_one()
            if apply:
                self._apply(conn, fit.guild_id, version, fit.created_at)
        return self.get(version)

    def apply(self, guild_id: int, version: int, now: datetime) -> None:
        """Put a passed fit of this server in force; NotApplicable if it is none, or is
        in force already."""
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(fits_t.c.guild_id, fits_t.c.passed)
                               .where(fits_t.c.version == version)).first()
            if row is None or row.guild_id != guild_id or not row.passed:
                raise NotApplicable(version)
            self._apply(conn, guild_id, version, now)

    def _apply(self, conn: sa.Connection, guild_id: int, version: int, now: datetime) -> None:
        current = self._lock_settings(conn, guild_id)
        if current == version:
            raise NotApplicable(version)
        conn.execute(guild_t.update().where(guild_t.c.guild_id == guild_id)
                     .values(fsrs_version=version))
        conn.execute(fits_t.update().where(fits_t.c.version == version).values(
            applied_at=now, previous_version=current or None, reverted_at=None))

    def revert(self, guild_id: int, now: datetime) -> int:
        """Put back what was in force before the current fit was applied; that version
        (0: the defaults). NothingToRevert when the defaults are in force."""
        with self.engine.begin() as conn:
            current = self._lock_settings(conn, guild_id)
            if not current:
                raise NothingToRevert(guild_id)
            previous = conn.execute(sa.select(fits_t.c.previous_version)
                                    .where(fits_t.c.version == current)).scalar()
            conn.execute(guild_t.update().where(guild_t.c.guild_id == guild_id)
                         .values(fsrs_version=previous))
            conn.execute(fits_t.update().where(fits_t.c.version == current)
                         .values(reverted_at=now))
        return previous or DEFAULTS

    def _lock_settings(self, conn: sa.Connection, guild_id: int) -> int | None:
        """The server's settings row, created if missing and locked for this transaction
        (an UPDATE takes the lock on both backends); the version in force."""
        _ensure_settings(conn, guild_id)
        conn.execute(guild_t.update().where(guild_t.c.guild_id == guild_id)
                     .values(fsrs_version=guild_t.c.fsrs_version))
        return conn.execute(sa.select(guild_t.c.fsrs_version)
                            .where(guild_t.c.guild_id == guild_id)).scalar()

    # -- one fit at a time -----------------------------------------------------------------

    def claim(self, guild_id: int, now: datetime, lease: timedelta) -> bool:
        """Take the server's fit for this process; False while another process holds it
        (a claim older than ``lease`` is void: its process died)."""
        c = guild_t.c
        with self.engine.begin() as conn:
            _ensure_settings(conn, guild_id)
            taken = conn.execute(guild_t.update().where(
                c.guild_id == guild_id,
                sa.or_(c.fit_started_at.is_(None), c.fit_started_at < now - lease))
                .values(fit_started_at=now)).rowcount
        return taken == 1

    def release(self, guild_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(guild_t.update().where(guild_t.c.guild_id == guild_id)
                         .values(fit_started_at=None))
