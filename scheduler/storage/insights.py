"""What reviews get wrong most: the cards missed on the first try and the mistakes made, for
a server or one learner (scheduler/leaderboard.py's `Insights`).

A server's closed days are counted once into `insight_day`: its page then reads a month of
counts and the open days' rows, not 80,000 rows of the log on every visit. A day closes an
hour after it ends (UTC): a review is written within milliseconds of its time, so nothing
lands in a closed day. Forgetting a learner drops the counted days of the servers they
played in (`forget_counts`), which are then counted again from what is left."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from scheduler.leaderboard import GRADED_KINDS, Insights
from scheduler.storage.boards import first_try_sql
from scheduler.storage.db import Queries, upsert_insert
from scheduler.storage.models import InsightDay, InsightDayCounted, ReviewLog

log_t = ReviewLog.__table__
day_t = InsightDay.__table__
counted_t = InsightDayCounted.__table__
CLOSES_AFTER = timedelta(hours=1)

Key = tuple[str, str]  # (deck id, card or mistake id)


class Counts:
    """Per card: [reviews, missed]; per mistake: times made."""

    def __init__(self):
        self.cards: dict[Key, list[int]] = {}
        self.mistakes: Counter[Key] = Counter()

    def add_card(self, key: Key, reviews: int, missed: int) -> None:
        _add(self.cards, key, reviews, missed)

    def ranked(self, top: int) -> Insights:
        """The `top` most missed cards (ties: by id) and mistakes (ties: by deck and id)."""
        by_card: dict[str, list[int]] = {}
        for (_, card_id), (reviews, missed) in self.cards.items():
            _add(by_card, card_id, reviews, missed)
        cards = sorted(((card_id, missed, reviews)
                        for card_id, (reviews, missed) in by_card.items() if missed),
                       key=lambda row: (-row[1], row[0]))
        mistakes = sorted(self.mistakes.items(), key=lambda kv: (-kv[1], kv[0]))
        return Insights(cards[:top], mistakes[:top])


def _add(counts: dict, key, reviews: int, missed: int) -> None:
    both = counts.setdefault(key, [0, 0])
    both[0] += reviews
    both[1] += missed


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time(), UTC)


def last_closed_day(now: datetime) -> date:
    return (now.astimezone(UTC) - CLOSES_AFTER).date() - timedelta(days=1)


class InsightQueries(Queries):
    """`store.insights`."""

    def learner(self, learner_id: int, since: datetime, *, top: int = 5,
                decks: Collection[str] | None = None) -> Insights:
        """What one learner got wrong most since `since`, in `decks` when given."""
        with self.engine.connect() as conn:
            counts = _count_log(conn, [log_t.c.learner_id == learner_id,
                                       log_t.c.reviewed_at >= since], decks)
        return counts.ranked(top)

    def server(self, guild_id: int, first_day: date, now: datetime, *, top: int = 5,
               decks: Collection[str] | None = None) -> Insights:
        """What a server's learners got wrong most from `first_day` (UTC) until `now`, in
        `decks` when given: the closed days' counts (counting the missing ones first) and
        the open days' reviews."""
        closed = last_closed_day(now)
        if first_day <= closed:
            self._count_missing_days(guild_id, first_day, closed)
        live_from = max(first_day, closed + timedelta(days=1))
        with self.engine.connect() as conn:
            counts = _count_log(conn, [log_t.c.guild_id == guild_id,
                                       log_t.c.reviewed_at >= _day_start(live_from)], decks)
            if first_day <= closed:
                _add_counted(conn, counts, guild_id, first_day, closed, decks)
        return counts.ranked(top)

    def _count_missing_days(self, guild_id: int, first: date, last: date) -> None:
        """Each closed day not yet counted: read (no lock held), then written in its own
        short transaction, so the bot's answers never queue behind a month of counting.
        Another process counting the same day at once writes the same rows: the first
        one stays."""
        with self.engine.connect() as conn:
            done = set(conn.execute(sa.select(counted_t.c.day).where(
                counted_t.c.guild_id == guild_id, counted_t.c.day.between(first, last)))
                .scalars())
        dialect = self.engine.dialect.name
        for day in _days(first, last):
            if day in done:
                continue
            with self.engine.connect() as conn:
                counts = _count_log(conn, _one_day(guild_id, day), None)
            rows = [{"kind": "card", "deck_id": deck, "item_id": card, "reviews": reviews,
                     "missed": missed} for (deck, card), (reviews, missed) in counts.cards.items()]
            rows += [{"kind": "mistake", "deck_id": deck, "item_id": mistake, "reviews": 0,
                      "missed": times} for (deck, mistake), times in counts.mistakes.items()]
            counted = sum(reviews for reviews, _ in counts.cards.values())
            with self.engine.begin() as conn:
                # A learner forgotten since the read took reviews with them: count it later.
                if _reviews_on(conn, guild_id, day) != counted:
                    continue
                if rows:
                    conn.execute(upsert_insert(day_t, dialect).on_conflict_do_nothing(),
                                 [{"guild_id": guild_id, "day": day, **row} for row in rows])
                conn.execute(upsert_insert(counted_t, dialect).on_conflict_do_nothing(),
                             {"guild_id": guild_id, "day": day})


def forget_counts(conn: sa.Connection, learner_id: int) -> None:
    """Drop the counted days of every server this learner reviewed in (in the transaction
    that forgets them, before their reviews go), so no count keeps what they did."""
    guilds = sa.select(log_t.c.guild_id).where(
        log_t.c.learner_id == learner_id, log_t.c.guild_id.is_not(None)).distinct()
    conn.execute(counted_t.delete().where(counted_t.c.guild_id.in_(guilds)))
    conn.execute(day_t.delete().where(day_t.c.guild_id.in_(guilds)))


def _days(first: date, last: date) -> Iterable[date]:
    return (first + timedelta(days=n) for n in range((last - first).days + 1))


def _one_day(guild_id: int, day: date) -> list[sa.ColumnElement]:
    return [log_t.c.guild_id == guild_id, log_t.c.reviewed_at >= _day_start(day),
            log_t.c.reviewed_at < _day_start(day + timedelta(days=1))]


def _reviews_on(conn: sa.Connection, guild_id: int, day: date) -> int:
    return conn.execute(sa.select(sa.func.count()).where(
        *_one_day(guild_id, day), log_t.c.kind.in_(GRADED_KINDS))).scalar_one()


def _count_log(conn: sa.Connection, scope: list[sa.ColumnElement],
               decks: Collection[str] | None) -> Counts:
    """The graded reviews in `scope` counted per card and per mistake. A right first try
    names no mistake: only the other reviews' mistakes are read."""
    c = log_t.c
    scope = [*scope, c.kind.in_(GRADED_KINDS)]
    scope += [c.deck_id.in_(sorted(decks))] if decks is not None else []
    first_try = first_try_sql()
    counts = Counts()
    for row in conn.execute(
            sa.select(c.deck_id, c.card_id, sa.func.count().label("reviews"),
                      sa.func.sum(sa.case((first_try, 0), else_=1)).label("missed"))
            .where(*scope).group_by(c.deck_id, c.card_id)):
        counts.add_card((row.deck_id, row.card_id), row.reviews, int(row.missed))
    counts.mistakes.update((deck, mistake) for deck, ids in conn.execute(
        sa.select(c.deck_id, c.mistake_ids).where(
            *scope, sa.or_(c.correct.is_(False), c.attempts > 1))) for mistake in ids)
    return counts


def _add_counted(conn: sa.Connection, counts: Counts, guild_id: int, first: date,
                 last: date, decks: Collection[str] | None) -> None:
    d = day_t.c
    scope = [d.guild_id == guild_id, d.day.between(first, last)]
    scope += [d.deck_id.in_(sorted(decks))] if decks is not None else []
    for row in conn.execute(
            sa.select(d.kind, d.deck_id, d.item_id, sa.func.sum(d.reviews).label("reviews"),
                      sa.func.sum(d.missed).label("missed"))
            .where(*scope).group_by(d.kind, d.deck_id, d.item_id)):
        if row.kind == "card":
            counts.add_card((row.deck_id, row.item_id), int(row.reviews), int(row.missed))
        else:
            counts.mistakes[(row.deck_id, row.item_id)] += int(row.missed)
