"""The decks a server plays, changed at once by several admins (issue 25, point 6), and
what removing or unsharing a deck ends (point 8). Run on SQLite and, under
tests/postgres.sh, on PostgreSQL (marked `postgres`)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from bot.engine import TutorError
from bot.engine.community_decks import CommunityDecks
from bot.engine.tutor import Tutor
from scheduler.storage.db import downgrade, make_engine, upgrade
from scheduler.storage.store import Store
from tests.helpers.decks import deck_yaml
from tests.helpers.engines import engine_of

pytestmark = pytest.mark.postgres

GUILD, OTHER = 1001, 2002


@pytest.fixture
def decks(tutor) -> CommunityDecks:
    return engine_of(tutor).decks


def named(deck_id: str) -> bytes:
    def rename(data):
        data["id"], data["title"] = deck_id, f"Deck {deck_id}"
        for card in data["cards"]:
            card["id"] = card["id"].replace("upload-basics", deck_id)
    return deck_yaml(rename)


def at_once(*calls):
    """Run the calls on threads released together; their results (or exceptions)."""
    start = threading.Barrier(len(calls))

    def run(call):
        start.wait()
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - the caller asserts on it
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def second_process(tutor: Tutor, db_url: str) -> CommunityDecks:
    """Another bot process (a shard) on the same database: its own engine and library."""
    store = Store(make_engine(db_url))
    return engine_of(Tutor(store, tutor.decks.bundled, clock=tutor.clock)).decks


def test_five_uploads_at_once_are_all_enabled(decks):
    ids = [f"deck-{i}" for i in range(5)]
    for _ in range(3):  # rounds: each starts from what the last one left
        results = at_once(*[lambda d=d: decks.upload(GUILD, f"{d}.yaml", named(d), "ann")
                            for d in ids])
        assert not [r for r in results if isinstance(r, Exception)]
        assert decks.enabled(GUILD) == ["mini", *ids]
        assert decks.tutor.store.decks.played(GUILD) == sorted(["mini", *ids])
        for d in ids:
            decks.set_enabled(GUILD, d, False)
        assert decks.enabled(GUILD) == ["mini"]
        assert decks.tutor.store.decks.played(GUILD) is None  # the default again


def test_a_disable_racing_uploads_in_two_processes_is_kept(decks, tutor, db_url):
    other = second_process(tutor, db_url)
    decks.upload(GUILD, "first.yaml", named("first"), "ann")
    for i in range(4):
        results = at_once(lambda: other.set_enabled(GUILD, "mini", False),
                          lambda i=i: decks.upload(GUILD, "d.yaml", named(f"late-{i}"), "ann"))
        assert not [r for r in results if isinstance(r, Exception)]
        assert decks.enabled(GUILD) == ["first", *[f"late-{j}" for j in range(i + 1)]]
        decks.set_enabled(GUILD, "mini", True)
    other.tutor.store.engine.dispose()


def test_enables_and_disables_at_once_all_count(decks):
    ids = [f"deck-{i}" for i in range(4)]
    for d in ids:
        decks.upload(GUILD, f"{d}.yaml", named(d), "ann")
    results = at_once(*[lambda d=d: decks.set_enabled(GUILD, d, False) for d in ids[:2]],
                      *[lambda: decks.set_enabled(GUILD, "mini", False)])
    assert not [r for r in results if isinstance(r, Exception)]
    assert decks.enabled(GUILD) == ids[2:]


def test_disabling_the_last_two_decks_at_once_leaves_one(decks):
    decks.upload(GUILD, "a.yaml", named("alpha"), "ann")
    decks.set_enabled(GUILD, "mini", False)
    decks.upload(GUILD, "b.yaml", named("beta"), "ann")
    results = at_once(lambda: decks.set_enabled(GUILD, "alpha", False),
                      lambda: decks.set_enabled(GUILD, "beta", False))
    refused = [r for r in results if isinstance(r, TutorError)]
    assert len(refused) == 1 and "At least one deck" in str(refused[0])
    assert len(decks.enabled(GUILD)) == 1


def test_enabling_a_deck_as_its_owner_removes_it_is_refused_or_undone(decks, tutor, db_url):
    other = second_process(tutor, db_url)
    for i in range(4):
        deck_id = f"shared-{i}"
        decks.upload(GUILD, "s.yaml", named(deck_id), "ann")
        decks.publish(GUILD, deck_id, True)
        other.tutor.decks.refresh(force=True)
        at_once(lambda d=deck_id: other.set_enabled(OTHER, d, True),
                lambda d=deck_id: decks.remove(GUILD, d))
        assert tutor.store.decks.played(OTHER) in (None, ["mini"])
    other.tutor.store.engine.dispose()


def test_removal_ends_sharing_and_every_servers_choice(decks):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    decks.publish(GUILD, "upload-basics", True)
    decks.set_enabled(OTHER, "upload-basics", True)
    decks.set_enabled(OTHER, "mini", False)
    assert decks.enabled(OTHER) == ["upload-basics"]
    decks.remove(GUILD, "upload-basics")
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")  # the same id again
    assert not decks.tutor.store.decks.get("upload-basics").public
    assert decks.enabled(OTHER) == ["mini"]  # the default decks, as a new server
    assert decks.tutor.store.decks.played(OTHER) is None
    assert decks.enabled(GUILD) == ["mini", "upload-basics"]  # its owner uploaded it


def test_unsharing_ends_other_servers_choice_not_the_owners(decks):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    decks.publish(GUILD, "upload-basics", True)
    decks.set_enabled(OTHER, "upload-basics", True)
    decks.publish(GUILD, "upload-basics", False)
    decks.publish(GUILD, "upload-basics", True)
    assert decks.enabled(OTHER) == ["mini"] and "upload-basics" in decks.enabled(GUILD)


def test_chosen_lists_migrate_to_rows_and_back(db_url):
    engine = make_engine(db_url)
    upgrade(engine, "0007")
    settings = sa.table("guild_settings", sa.column("guild_id"), sa.column("decks", sa.JSON),
                        sa.column("public_play"), sa.column("timezone"),
                        sa.column("week_start"), sa.column("season"))
    defaults = {"public_play": False, "timezone": "UTC", "week_start": 0, "season": 1}
    with engine.begin() as conn:
        conn.execute(settings.insert(), [
            {"guild_id": 1, "decks": ["mini", "x"], **defaults},
            {"guild_id": 2, "decks": None, **defaults},
            {"guild_id": 3, "decks": [], **defaults}])
    upgrade(engine)
    store = Store(engine)
    assert [store.decks.played(g) for g in (1, 2, 3, 4)] == [["mini", "x"], None, None, None]
    downgrade(engine, "0007")
    with engine.connect() as conn:
        back = dict(conn.execute(sa.select(settings.c.guild_id, settings.c.decks)).all())
    assert back == {1: ["mini", "x"], 2: None, 3: None}
    engine.dispose()
