"""bot/engine/plays.py: the decks a learner plays here, as the engine decides them."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from bot.engine.plays import Plays
from scheduler.studyday import study_day
from tests.helpers.decks import DECK
from tests.helpers.engines import engine_of

HOME, AWAY = 1001, 2002
OWN = {"upload-basics/move", "upload-basics/shape"}


@pytest.fixture
def plays(tutor) -> Plays:
    engine_of(tutor).decks.upload(HOME, "deck.yaml", yaml.safe_dump(DECK).encode(), "admin")
    for deck_id in bundled(tutor):  # the server plays only its own deck
        engine_of(tutor).decks.set_enabled(HOME, deck_id, False)
    return engine_of(tutor).plays


def bundled(tutor) -> list[str]:
    return list(tutor.decks.bundled.decks)


def test_a_server_plays_its_enabled_decks_and_a_dm_the_last_servers(plays, tutor, clock):
    ann = tutor.learner("discord:1")
    assert plays.decks(ann.id, HOME) == ["upload-basics"]
    assert plays.decks(ann.id, AWAY) == bundled(tutor)
    assert plays.decks(ann.id, None) == bundled(tutor)  # never used a server
    tutor.store.servers.note_visit(HOME, ann.id, clock())
    assert plays.decks(ann.id, None) == ["upload-basics"]
    clock.advance(minutes=1)
    tutor.store.servers.note_visit(AWAY, ann.id, clock())
    assert plays.decks(ann.id, None) == bundled(tutor)


def test_cards_topics_and_ids_follow_the_decks(plays, tutor, clock):
    ann = tutor.learner("discord:1")
    assert {c.id for c in plays.cards(ann.id, HOME)} == OWN == plays.card_ids(ann.id, HOME)
    assert plays.topics(ann.id, HOME) == ["devices"]
    assert "devices" not in plays.topics(ann.id, AWAY)
    elsewhere = plays.topics(ann.id, AWAY)[0]
    assert elsewhere != "devices" and plays.cards(ann.id, HOME, topic=elsewhere) == []
    engine_of(tutor).decks.remove(HOME, "upload-basics")  # a new library: ids read again
    assert plays.card_ids(ann.id, HOME) == {c.id for c in tutor.servable()}


def test_serving_progress_and_the_reminder_count_agree(plays, tutor, clock):
    ann = tutor.learner("discord:1")
    play = engine_of(tutor).cards
    for _ in OWN:
        playing = play.serve(ann, mode="learn", guild_id=HOME)
        assert playing.card.id in OWN
        right = "copy" if playing.card.id.endswith("move") else {"attr": "shape"}
        assert play.answer(playing.served.serve_id, 0, ann, right).correct
    clock.advance(days=1)
    today = study_day(clock(), ann.timezone, ann.rollover_hour)
    progress = plays.progress(ann, None)  # a DM: the server used last
    assert (progress.due_now, progress.seen, progress.cards) == (2, 2, 2)
    assert tutor.store.reminders.due_count(ann.id, today, "sm2",
                                           plays.card_ids(ann.id, None)) == 2
    assert play.serve(ann, mode="review").card.id in OWN
    assert plays.progress(ann, AWAY).due_now == 0  # elsewhere they are not played
    assert tutor.store.reminders.due_count(ann.id, today, "sm2",
                                           plays.card_ids(ann.id, AWAY)) == 0


def test_insights_cover_the_decks_played_now(plays, tutor):
    ann = tutor.learner("discord:1")
    play = engine_of(tutor).cards
    playing = play.serve(ann, mode="learn", guild_id=HOME, card_id="upload-basics/move")
    play.answer(playing.served.serve_id, 0, ann, "none")
    assert play.answer(playing.served.serve_id, 1, ann, "copy").finished  # missed
    boards = engine_of(tutor).boards
    assert [c for c, *_ in boards.server_insights(HOME, 30).missed_cards] == [
        "upload-basics/move"]
    assert boards.activity(ann, 30, 3, HOME).insights.mistakes == [
        ("Thinking to() works in place", 1)]  # by its deck's title
    engine_of(tutor).decks.remove(HOME, "upload-basics")
    assert boards.server_insights(HOME, 30).missed_cards == []
    assert boards.activity(ann, 30, 3, HOME).insights.mistakes == []


@pytest.mark.parametrize("scheduler", ["sm2", "fsrs"])
def test_the_forecast_counts_the_due_days_progress_counts(plays, tutor, clock, scheduler):
    ann = tutor.learner("discord:1")
    tutor.store.learners.update(ann.id, scheduler=scheduler)
    ann = tutor.store.learners.get(ann.id)
    play = engine_of(tutor).cards
    assert all(n == 0 for _, n in plays.forecast(ann, HOME))  # nothing seen yet
    for _ in OWN:
        playing = play.serve(ann, mode="learn", guild_id=HOME)
        right = "copy" if playing.card.id.endswith("move") else {"attr": "shape"}
        play.answer(playing.served.serve_id, 0, ann, right)
    ahead = plays.forecast(ann, HOME, days=30)
    today, progress = tutor.today(ann), plays.progress(ann, HOME)
    assert [day for day, _ in ahead] == [today + timedelta(days=d) for d in range(30)]
    assert ahead[0][1] == progress.due_now == 0 and sum(n for _, n in ahead) == 2
    assert next(day for day, n in ahead if n) == progress.next_due
    if scheduler == "sm2":
        assert ahead[1] == (today + timedelta(days=1), 2)
    clock.advance(days=40)  # all overdue: today's bar holds them, as due_now does
    ahead = plays.forecast(ann, HOME, days=3)
    assert [n for _, n in ahead] == [2, 0, 0] == [plays.progress(ann, HOME).due_now, 0, 0]
    assert all(n == 0 for _, n in plays.forecast(ann, AWAY))  # not played elsewhere
