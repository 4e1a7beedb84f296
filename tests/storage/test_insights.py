"""What a server, or one learner, gets wrong most: the cards missed on the first try and the
mistakes made, with a server's closed days counted once (scheduler/storage/insights.py) and
always agreeing with the log itself."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
import sqlalchemy as sa

from scheduler.storage.insights import last_closed_day
from scheduler.storage.models import InsightDay, InsightDayCounted
from tests.helpers.records import record

pytestmark = pytest.mark.postgres

GUILD, OTHER = 4242, 77
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
EVERYTHING = 1000  # a `top` past every card and mistake


def _month(now: datetime) -> date:
    return (now - timedelta(days=29)).date()


def test_insights_name_the_cards_and_mistakes_missed_most(store):
    person = store.learners.get_or_create("discord:1", display_name="ann", now=NOW)
    for i, (card, mistakes) in enumerate([("d/a", ["m1"]), ("d/a", ["m1", "m2"]),
                                          ("d/b", ["m2"]), ("d/c", [])]):
        store.record(record(person.id, f"x{i}", card_id=card, kind="review",
                            correct=not mistakes, attempts=1 if not mistakes else 2,
                            mistake_ids=mistakes, guild_id=GUILD, changes_schedule=False))
    found = store.insights.server(GUILD, _month(NOW), NOW)
    assert found.missed_cards == [("d/a", 2, 2), ("d/b", 1, 1)]
    assert found.mistakes == [(("d", "m1"), 2), (("d", "m2"), 2)]  # ties by id
    mine = store.insights.learner(person.id, NOW - timedelta(days=30), top=1)
    assert mine.missed_cards == [("d/a", 2, 2)]


def test_insights_count_a_mistake_id_per_deck(store):
    """Two decks may use one mistake id for different mistakes: each is counted apart."""
    person = store.learners.get_or_create("discord:1", display_name="ann", now=NOW)
    for i, (deck, times) in enumerate([("e", 1), ("d", 2)]):
        for j in range(times):
            store.record(record(person.id, f"x{i}{j}", card_id=f"{deck}/a", deck_id=deck,
                                kind="review", correct=False, attempts=3,
                                mistake_ids=["in_place"], guild_id=GUILD,
                                changes_schedule=False))
    found = store.insights.server(GUILD, _month(NOW), NOW)
    assert found.mistakes == [(("d", "in_place"), 2), (("e", "in_place"), 1)]


class History:
    """Random reviews written through the store, and the same counted by hand."""

    KINDS = ("review", "new", "drill", "cram")

    def __init__(self, store, seed: int):
        self.store, self.rng, self.rows, self.n = store, random.Random(seed), [], 0
        self.people = [store.learners.get_or_create(f"discord:{i}", display_name=f"p{i}",
                                                    now=NOW - timedelta(days=60))
                       for i in range(4)]

    def play(self, start: datetime, days: int, per_day: int, span_s: int = 86_400) -> None:
        rng = self.rng
        for day in range(days):
            for _ in range(per_day):
                deck = rng.choice(("d", "e"))
                correct, attempts = rng.random() < 0.6, rng.choice((1, 1, 2, 3))
                row = dict(learner_id=rng.choice(self.people).id,
                           card_id=f"{deck}/{rng.choice('abc')}", deck_id=deck,
                           guild_id=rng.choice((GUILD, GUILD, OTHER, None)),
                           kind=rng.choice(self.KINDS), correct=correct, attempts=attempts,
                           hint_used=rng.random() < 0.2,
                           mistake_ids=[] if correct and attempts == 1 else
                           rng.sample(["m1", "m2", "m3"], rng.choice((0, 1, 2))),
                           reviewed_at=start + timedelta(days=day,
                                                         seconds=rng.randrange(span_s)))
                self.n += 1
                self.store.record(record(row["learner_id"], f"h{self.n}", **{
                    k: v for k, v in row.items() if k != "learner_id"},
                    changes_schedule=False))
                self.rows.append(row)

    def forget(self, learner_id: int) -> None:
        self.store.learners.delete(learner_id)
        self.rows = [r for r in self.rows if r["learner_id"] != learner_id]

    def expected(self, guild_id: int, first_day: date, decks=None):
        """(cards as (id, missed, reviews), mistakes as ((deck, id), times)), ranked."""
        cards, mistakes = {}, Counter()
        since = datetime.combine(first_day, datetime.min.time(), UTC)
        for r in self.rows:
            if r["guild_id"] != guild_id or r["reviewed_at"] < since or \
                    r["kind"] not in ("review", "new") or (decks and r["deck_id"] not in decks):
                continue
            first_try = r["correct"] and r["attempts"] == 1 and not r["hint_used"]
            both = cards.setdefault(r["card_id"], [0, 0])
            both[0] += 1
            both[1] += not first_try
            mistakes.update((r["deck_id"], m) for m in r["mistake_ids"])
        ranked = sorted(((c, missed, n) for c, (n, missed) in cards.items() if missed),
                        key=lambda row: (-row[1], row[0]))
        return ranked, sorted(mistakes.items(), key=lambda kv: (-kv[1], kv[0]))


def _found(store, guild_id, now, decks=None):
    found = store.insights.server(guild_id, _month(now), now, top=EVERYTHING, decks=decks)
    return found.missed_cards, found.mistakes


def _counted_days(store, guild_id) -> list[date]:
    t = InsightDayCounted.__table__
    with store.engine.connect() as conn:
        return sorted(conn.execute(sa.select(t.c.day).where(t.c.guild_id == guild_id))
                      .scalars())


def test_counted_days_always_agree_with_the_log_as_days_pass(store):
    history = History(store, seed=7)
    history.play(NOW - timedelta(days=40), days=41, per_day=12)
    now = NOW
    for step in range(3):
        for guild_id in (GUILD, OTHER):
            first = _found(store, guild_id, now)  # counts the closed days
            assert first == history.expected(guild_id, _month(now)), (step, guild_id)
            assert _found(store, guild_id, now) == first  # read back from the counts
            assert _found(store, guild_id, now, decks={"e"}) == \
                history.expected(guild_id, _month(now), decks={"e"})
        assert _counted_days(store, GUILD)[-1] == last_closed_day(now)
        now += timedelta(days=1)
        history.play(now - timedelta(hours=20), days=1, per_day=15)  # a new day's reviews


def test_a_day_closes_an_hour_after_it_ends(store):
    """A review written at 23:59 is read from the log until the day is counted."""
    assert last_closed_day(datetime(2026, 12, 2, 0, 59, tzinfo=UTC)) == date(2026, 11, 30)
    assert last_closed_day(datetime(2026, 12, 2, 1, 0, tzinfo=UTC)) == date(2026, 12, 1)
    just_after = datetime(2026, 12, 2, 0, 30, tzinfo=UTC)
    assert _found(store, GUILD, just_after) == ([], [])
    assert _counted_days(store, GUILD)[-1] == date(2026, 11, 30)
    history = History(store, seed=3)
    history.play(datetime(2026, 12, 1, 23, 0, tzinfo=UTC), days=1, per_day=30, span_s=3600)
    expected = history.expected(GUILD, _month(just_after))
    assert expected[0] and expected[1]
    assert _found(store, GUILD, just_after) == expected
    an_hour_on = just_after + timedelta(hours=1)  # Dec 1 closes: counted, the same
    assert _found(store, GUILD, an_hour_on) == history.expected(GUILD, _month(an_hour_on))
    assert _counted_days(store, GUILD)[-1] == date(2026, 12, 1)


def test_forgetting_a_learner_takes_them_out_of_the_counts(store):
    history = History(store, seed=11)
    history.play(NOW - timedelta(days=20), days=21, per_day=10)
    _found(store, GUILD, NOW)
    assert _counted_days(store, GUILD)
    history.forget(history.people[0].id)
    assert _found(store, GUILD, NOW) == history.expected(GUILD, _month(NOW))
    with store.engine.connect() as conn:  # the counts were made again, without them
        assert conn.execute(sa.select(sa.func.count()).select_from(
            InsightDay.__table__)).scalar_one() > 0


def test_a_quiet_day_is_counted_once_and_other_servers_keep_their_counts(store):
    history = History(store, seed=5)
    history.play(NOW - timedelta(days=3), days=1, per_day=10)
    _found(store, GUILD, NOW)
    assert _counted_days(store, GUILD) == [
        _month(NOW) + timedelta(days=n) for n in range(29)]  # each day, reviews or not
    _found(store, OTHER, NOW)
    before = _counted_days(store, OTHER)
    loner = store.learners.get_or_create("discord:loner", display_name="l", now=NOW)
    store.record(record(loner.id, "loner", guild_id=GUILD, kind="review",
                        reviewed_at=NOW - timedelta(days=5), changes_schedule=False))
    store.learners.delete(loner.id)  # played in GUILD only
    assert _counted_days(store, GUILD) == []
    assert _counted_days(store, OTHER) == before
