"""The reminder sweep's queries: claim due reminders, advance them, count due cards."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import date, datetime

import sqlalchemy as sa

from scheduler.choice import DEFAULT_SCHEDULER, DUE, SchedulerName
from scheduler.reminders import Claimed
from scheduler.storage.db import Queries
from scheduler.storage.models import CardState, GuildMember, GuildSettings, Learner

learner_t = Learner.__table__
state_t = CardState.__table__
member_t = GuildMember.__table__
guild_t = GuildSettings.__table__
# What a reminder sweep reads of each claimed learner: exactly the fields of Claimed.
REMINDER_FIELDS = tuple(field.name for field in dataclasses.fields(Claimed))


def due_day_sql(scheduler: SchedulerName) -> sa.ColumnElement:
    """A card state's due day under ``scheduler``: scheduler/choice.py's DUE, as SQL."""
    due = DUE[scheduler]
    if due.fallback is None:
        return state_t.c[due.column]
    return sa.func.coalesce(state_t.c[due.column], state_t.c[due.fallback])


class ReminderQueries(Queries):
    """`store.reminders`."""

    def claim(self, now: datetime, token: str, expired_before: datetime,
              limit: int) -> list[sa.Row]:
        """Claim up to `limit` due reminders (oldest first) for this sweep.

        A claim older than `expired_before` belonged to a sweep that died: take it over.
        On PostgreSQL, rows another process is claiming right now are skipped."""
        c = learner_t.c
        due = (
            sa.select(c.id)
            .where(c.reminders_enabled.is_(True), c.unreachable.is_(False),
                   c.next_reminder_at <= now,
                   sa.or_(c.reminder_claim.is_(None), c.reminder_claimed_at < expired_before))
            .order_by(c.next_reminder_at, c.id).limit(limit)
        )
        if self.engine.dialect.name == "postgresql":
            due = due.with_for_update(skip_locked=True)
        claim = (learner_t.update().where(c.id.in_(due.scalar_subquery()))
                 .values(reminder_claim=token, reminder_claimed_at=now)
                 .returning(*(c[name] for name in REMINDER_FIELDS)))
        with self.engine.begin() as conn:
            rows = conn.execute(claim).all()
        return sorted(rows, key=lambda row: (row.next_reminder_at, row.id))

    def advance(self, learner_id: int, token: str, next_at: datetime, *,
                sent_at: datetime | None, ignored: int | None = None,
                unreachable: bool = False) -> bool:
        """Move a claimed reminder to its next slot and release the claim."""
        values = {"next_reminder_at": next_at, "reminder_claim": None,
                  "reminder_claimed_at": None, "unreachable": unreachable}
        if sent_at is not None:
            values["last_reminder_at"] = sent_at
        if ignored is not None:
            values["reminders_ignored"] = ignored
        with self.engine.begin() as conn:
            result = conn.execute(learner_t.update().where(
                learner_t.c.id == learner_id, learner_t.c.reminder_claim == token)
                .values(**values))
        return bool(result.rowcount)

    def due_count(self, learner_id: int, today: date,
                  scheduler: SchedulerName = DEFAULT_SCHEDULER,
                  cards: Collection[str] | None = None) -> int:
        """Cards due by ``today`` under ``scheduler``; only ``cards`` when given (the
        ones the learner can be served)."""
        query = sa.select(sa.func.count()).where(
            state_t.c.learner_id == learner_id, due_day_sql(scheduler) <= today)
        if cards is not None:
            query = query.where(state_t.c.card_id.in_(sorted(cards)))
        with self.engine.connect() as conn:
            return conn.execute(query).scalar_one()

    def channel_for(self, learner_id: int) -> int | None:
        """The reminder channel of the server this learner used most recently, if any."""
        query = (
            sa.select(guild_t.c.reminder_channel_id)
            .join(member_t, member_t.c.guild_id == guild_t.c.guild_id)
            .where(member_t.c.learner_id == learner_id,
                   guild_t.c.reminder_channel_id.is_not(None))
            .order_by(member_t.c.last_seen_at.desc()).limit(1)
        )
        with self.engine.connect() as conn:
            return conn.execute(query).scalar()
