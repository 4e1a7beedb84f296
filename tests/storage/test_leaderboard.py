"""Points that reward real learning, weeks in the server's timezone, hidden learners and
seasons."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from scheduler import leaderboard as lb
from tests.helpers.records import RIGHT, record

pytestmark = pytest.mark.postgres

GUILD = 4242
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)  # a Wednesday


def test_first_try_due_reviews_count_most_and_cram_or_drills_nothing():
    assert lb.points_for("review", True, 1, False) == 10
    assert lb.points_for("review", True, 1, True) == 3  # a hint: not recall
    assert lb.points_for("review", True, 2, False) == 3
    assert lb.points_for("review", False, 3, False) == 1
    assert lb.points_for("new", True, 1, False) == 5
    assert lb.points_for("new", False, 3, True) == 0
    for kind in ("drill", "cram"):
        assert lb.points_for(kind, True, 1, False) == 0


def test_the_sql_points_match_points_for(store):
    combos = list(itertools.product(("review", "new", "drill", "cram"), (True, False),
                                    (1, 2, 3), (True, False)))
    for i, (kind, correct, attempts, hint) in enumerate(combos):
        person = store.learners.get_or_create(f"discord:{i}", display_name=f"p{i}", now=NOW)
        store.record(record(person.id, f"a{i}", kind=kind, correct=correct, attempts=attempts,
                            hint_used=hint, guild_id=GUILD, changes_schedule=False))
    board = store.boards.standings(GUILD, None, per_page=1000)
    by_name = {s.name: s.points for s in board.standings}
    for i, combo in enumerate(combos):
        if combo[0] in lb.GRADED_KINDS:
            assert by_name[f"p{i}"] == lb.points_for(*combo), combo
        else:
            assert f"p{i}" not in by_name  # drills and cram are not on the board at all


def test_farming_is_worth_nothing_through_the_engine(tutor, store, clock):
    learner = tutor.learner("discord:1", "farmer")
    store.learners.update(learner.id, new_per_day=1)
    learner = store.learners.get(learner.id)
    served = tutor.next_card(learner, guild_id=GUILD)
    tutor.answer(tutor.answer(served, {"method": "step"}).served, RIGHT[served.card_id])
    drill = tutor.next_card(learner, guild_id=GUILD)
    assert drill.kind == "drill"  # the same card again the same day
    tutor.answer(drill, RIGHT[drill.card_id])
    for _ in range(3):  # practice beyond the new-card limit is cram
        cram = tutor.next_card(learner, mode="practice", guild_id=GUILD)
        assert cram.kind == "cram"
        tutor.answer(cram, RIGHT[cram.card_id])
    (standing,) = store.boards.standings(GUILD, None).standings
    assert standing.points == 2 and standing.reviews == 1  # only the graded new card


@pytest.mark.parametrize("zone, first_day, expected", [
    ("UTC", 0, datetime(2026, 11, 30, tzinfo=UTC)),
    ("Asia/Tokyo", 0, datetime(2026, 11, 29, 15, tzinfo=UTC)),  # Mon 00:00 JST
    ("America/Los_Angeles", 6, datetime(2026, 11, 29, 8, tzinfo=UTC)),  # Sun 00:00 PST
])
def test_the_week_starts_at_local_midnight_of_the_servers_first_day(zone, first_day, expected):
    assert lb.week_start(NOW, zone, first_day) == expected


def test_a_review_just_before_the_local_week_start_is_last_week(store):
    person = store.learners.get_or_create("discord:1", display_name="ann", now=NOW)
    start = lb.week_start(NOW, "Asia/Tokyo")
    store.record(record(person.id, "old", reviewed_at=start - timedelta(seconds=1),
                        kind="review", guild_id=GUILD, changes_schedule=False))
    store.record(record(person.id, "new", card_id="d/x", reviewed_at=start, kind="review",
                        guild_id=GUILD, changes_schedule=False))
    (standing,) = store.boards.standings(GUILD, start).standings
    assert standing.points == 10


def populate(store, scores: list[int]) -> list:
    people = []
    for i, score in enumerate(scores):
        person = store.learners.get_or_create(f"discord:{i}", display_name=f"learner{i}", now=NOW)
        for j in range(score):
            store.record(record(person.id, f"{i}-{j}", card_id=f"d/c{j}", kind="review",
                                guild_id=GUILD, changes_schedule=False))
        people.append(person)
    return people


def test_pages_ties_hidden_learners_and_the_callers_own_rank(store):
    people = populate(store, [12 - i for i in range(12)] + [1])
    store.learners.update(people[0].id, leaderboard_visible=False)
    first = store.boards.standings(GUILD, None, caller_id=people[12].id)
    assert first.total == 12 and first.pages == 2
    assert [s.name for s in first.standings][:2] == ["learner1", "learner2"]
    assert "learner0" not in [s.name for s in first.standings]
    assert first.caller.rank == 11 and first.caller.name == "learner12"  # tie with learner11
    second = store.boards.standings(GUILD, None, page=2)
    assert [s.rank for s in second.standings] == [11, 11]
    assert store.boards.standings(GUILD, None, page=99).page == 2
    hidden = store.boards.standings(GUILD, None, caller_id=people[0].id)
    assert hidden.caller is None


def test_a_new_season_starts_an_empty_board_and_keeps_history(store):
    populate(store, [3])
    settings = store.servers.update_settings(GUILD, season=2,
                                             season_started_at=NOW + timedelta(minutes=1))
    season = lb.period_start(settings, "season", NOW + timedelta(hours=1))
    assert store.boards.standings(GUILD, season).standings == []
    assert len(store.reviews.on_day(1, NOW.date())) == 3  # nothing deleted
