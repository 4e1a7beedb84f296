"""Decks a server brings (`bot.engine.community_decks`): upload checks, versions, sharing,
serving, export."""

from __future__ import annotations

import io
import sqlite3
import time
import zipfile

import pytest
import yaml

from bot.engine import DeckRejected, Draft, TutorError, Uploaded
from bot.engine.community_decks import CommunityDecks
from bot.engine.tutor import Tutor
from content.loader import parse_deck
from scheduler.storage.db import make_engine
from scheduler.storage.store import Store
from tests.helpers.decks import DECK, deck_yaml
from tests.helpers.engines import engine_of
from tests.helpers.hostile import alias_bomb
from tests.helpers.paths import REPO

pytestmark = pytest.mark.postgres

GUILD, OTHER = 1001, 2002
MOVE = "upload-basics/move"


@pytest.fixture
def decks(tutor) -> CommunityDecks:
    return engine_of(tutor).decks


def refused(decks, data: bytes, guild: int = GUILD, filename: str = "deck.yaml"):
    with pytest.raises(DeckRejected) as caught:
        decks.upload(guild, filename, data, "ann")
    assert decks.tutor.store.decks.all() == [] or guild == OTHER
    return caught.value


def many_chips(data: dict, count: int) -> None:
    fill_in = data["cards"][1]
    for i in range(count - len(fill_in["chips"])):
        fill_in["chips"].append({"id": f"attr{i}", "text": f"attr{i}"})
        fill_in["blanks"][0]["wrong"][f"attr{i}"] = {"mistake": "wrong_attribute",
                                                     "says": "Not an attribute."}


def card(index: int, **changes):
    def edit(data):
        data["cards"][index].update(changes)
    return edit


# -- what an upload refuses -----------------------------------------------------------------

def test_a_file_over_256_kib_is_refused_before_parsing(decks):
    error = refused(decks, b"id: x\n" + b"# padding\n" * 30_000)
    assert "256 KiB" in error.problems[0] and error.problems[0].startswith("line 1, deck: ")


def test_malformed_yaml_names_its_line(decks):
    error = refused(decks, b"id: upload-basics\ntitle: [unclosed\ncards: 1\n")
    assert error.problems[0].startswith("line 3, deck: YAML")


def test_an_alias_bomb_is_refused_quickly(decks):
    started = time.perf_counter()
    error = refused(decks, alias_bomb())
    assert time.perf_counter() - started < 2
    assert "expands to more than" in error.problems[0]


def test_deep_nesting_is_refused(decks):
    assert "nests deeper" in refused(decks, b"[" * 5000 + b"]" * 5000).problems[0]


def test_schema_and_lint_problems_come_back_as_line_messages(decks):
    data = deck_yaml(lambda d: d["cards"][0]["options"][1].update(mistake="nope"))
    error = refused(decks, data)
    line = data.decode().splitlines().index("    mistake: nope") + 1
    assert f"line {line}, card upload-basics/move: unknown mistake id 'nope'" in error.problems


def test_more_than_500_cards_are_refused(decks):
    def many(data):
        data["cards"] = [dict(data["cards"][0], id=f"upload-basics/c{i}") for i in range(501)]
    assert "501 cards; at most 500" in refused(decks, deck_yaml(many)).problems[0]


@pytest.mark.parametrize("edit, limit", [
    (lambda d: d.update(title="T" * 101), "100"),
    (card(0, prompt="Why? " * 900), "4,096"),
    (card(0, topics=[f"topic-{i}" for i in range(30)]), "256"),
    (card(0, hint="Think. " * 150), "1,024"),
    (lambda d: d["mistakes"][0].update(explanation="Long. " * 200), "1,024"),
    (lambda d: d["cards"][1]["chips"][1].update(text="d" * 101), "100"),
    (lambda d: many_chips(d, 26), "at most 25 options"),
    (card(0, options=[{"id": "copy", "text": "A new tensor", "correct": True}] + [
        {"id": f"o{i}", "text": f"option {i}", "mistake": "in_place", "says": "No."}
        for i in range(24)]), "25 buttons"),
])
def test_text_over_a_discord_limit_is_refused_naming_the_limit(decks, edit, limit):
    problems = refused(decks, deck_yaml(edit)).problems
    assert any(p.startswith("line ") and limit in p for p in problems), problems


def code_card(**changes) -> dict:
    return {"id": "upload-basics/loop", "type": "code", "rev": 1, "difficulty": "hard",
            "topics": ["loop"], "prompt": "Write the loop.", "starter": "# loop\n",
            "given_names": ["model"], "checker": "train_loop", "mistakes": ["in_place"],
            "hint": "Step every N batches.", "reference": "pass\n",
            "takeaway": "Accumulate, then step.", **changes}


def test_code_cards_may_only_name_checkers_that_ship(decks):
    data = deck_yaml(lambda d: d["cards"].append(code_card(checker="rm_rf")))
    problems = refused(decks, data).problems
    assert any("checker 'rm_rf' does not ship" in p for p in problems)
    long = deck_yaml(lambda d: d["cards"].append(code_card(starter="x = 1\n" * 700)))
    assert any("4,000" in p for p in refused(decks, long).problems)


def test_the_giveaway_pragma_is_refused_and_the_checks_run(decks):
    text = "# tutor-lint: allow-giveaways\n" + deck_yaml(
        card(0, hint="The answer: a new tensor on the GPU")).decode()
    problems = refused(decks, text.encode()).problems
    assert problems[0].startswith("line 1, deck: '# tutor-lint: allow-giveaways'")
    assert any("hint" in p for p in problems[1:])


def test_ids_of_bundled_and_other_servers_decks_are_taken(decks):
    bundled = refused(decks, deck_yaml(deck=yaml.safe_load(
        yaml.safe_dump(DECK).replace("upload-basics", "mini"))))
    assert "ships with the bot" in str(bundled)
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    other = refused(decks, deck_yaml(), guild=OTHER)
    line = deck_yaml().decode().splitlines().index("id: upload-basics") + 1
    assert "another server" in str(other) and other.problems == [
        f"line {line}, deck: deck id 'upload-basics' is taken by another server"]
    assert decks.tutor.store.decks.get("upload-basics").version == 1


def test_other_extensions_are_refused(decks):
    assert ".yaml" in str(refused(decks, deck_yaml(), filename="deck.json"))


def test_a_new_version_must_bump_rev_when_a_card_changed(decks):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    with pytest.raises(DeckRejected, match="new version") as caught:
        decks.upload(GUILD, "deck.yaml", deck_yaml(card(0, prompt="What is returned?")), "ann")
    assert "bump rev" in caught.value.problems[0]
    decks.upload(GUILD, "deck.yaml", deck_yaml(card(0, rev=3, content_rev=3)), "ann")
    with pytest.raises(DeckRejected) as back:
        decks.upload(GUILD, "deck.yaml", deck_yaml(card(0, rev=2)), "ann")
    assert "revs only go up" in back.value.problems[0]
    assert decks.tutor.store.decks.get("upload-basics").version == 2


def test_mentions_are_stored_and_served_unchanged(decks, tutor):
    prompt = "@everyone <@123> <@&456> what does x.to() return?"
    decks.upload(GUILD, "deck.yaml", deck_yaml(card(0, prompt=prompt)), "ann")
    playing = engine_of(tutor).cards.serve(tutor.learner("discord:1"), guild_id=GUILD, card_id=MOVE)
    assert playing.card.prompt == prompt


# -- the happy path ---------------------------------------------------------------------------

def test_upload_stores_enables_serves_and_versions_keep_or_restart_progress(decks, tutor, clock):
    result = decks.upload(GUILD, "basics.yml", deck_yaml(), "ann")
    assert result == Uploaded("upload-basics", "Upload basics", 1, 2, True)
    mine = {s.deck_id: s for s in decks.summaries(GUILD)}["upload-basics"]
    assert (mine.origin, mine.enabled, mine.public, mine.version) == ("uploaded", True, False, 1)
    play, ann = engine_of(tutor).cards, tutor.learner("discord:1")
    playing = play.serve(ann, guild_id=GUILD, card_id=MOVE)
    verdict = play.answer(playing.served.serve_id, 0, ann, "copy")
    assert verdict.correct and tutor.store.reviews.state(ann.id, MOVE).deck_id == "upload-basics"

    typo = deck_yaml(card(0, rev=2, content_rev=1, hint="Does the call change x itself??"))
    assert decks.upload(GUILD, "basics.yml", typo, "ann") == Uploaded(
        "upload-basics", "Upload basics", 2, 2, False)
    assert play.serve(ann, guild_id=GUILD, mode="review", card_id=MOVE) is None  # progress kept

    meaning = deck_yaml(card(0, rev=3, content_rev=3, prompt="What does x.cuda() return?"))
    assert decks.upload(GUILD, "basics.yml", meaning, "bob").version == 3
    again = play.serve(ann, guild_id=GUILD, mode="review", card_id=MOVE)
    assert again is not None and again.served.state.repetitions == 0  # starts over
    assert [v.version for v in tutor.store.decks.versions("upload-basics")] == [1, 2, 3]
    assert b"x.to(" in tutor.store.decks.yaml("upload-basics", 1).encode()  # history kept


def test_an_uploaded_deck_is_served_only_where_enabled(decks, tutor):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    ann, play = tutor.learner("discord:1"), engine_of(tutor).cards
    assert play.serve(ann, guild_id=OTHER, card_id=MOVE) is None
    assert play.serve(ann, card_id=MOVE) is None  # no server: bundled decks only
    assert "upload-basics" not in decks.ids(OTHER) and decks.ids(GUILD, "up") == [
        "upload-basics"]


def test_sharing_needs_publishing_by_the_owner(decks, tutor):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    with pytest.raises(TutorError):
        decks.set_enabled(OTHER, "upload-basics", True)
    with pytest.raises(TutorError, match="Only the server"):
        decks.publish(OTHER, "upload-basics", True)
    decks.publish(GUILD, "upload-basics", True)
    assert decks.set_enabled(OTHER, "upload-basics", True) == ["mini", "upload-basics"]
    shared = {s.deck_id: s for s in decks.summaries(OTHER)}["upload-basics"]
    assert (shared.origin, shared.enabled, shared.public) == ("shared", True, True)
    bob = tutor.learner("discord:2")
    assert engine_of(tutor).cards.serve(bob, guild_id=OTHER, card_id=MOVE) is not None
    decks.publish(GUILD, "upload-basics", False)
    assert engine_of(tutor).cards.serve(bob, guild_id=OTHER, card_id=MOVE) is None


def test_enabling_keeps_one_deck_on_and_only_decks_the_server_sees(decks):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    assert decks.set_enabled(GUILD, "mini", False) == ["upload-basics"]
    with pytest.raises(TutorError, match="At least one deck"):
        decks.set_enabled(GUILD, "upload-basics", False)
    with pytest.raises(TutorError, match="No deck"):
        decks.set_enabled(OTHER, "upload-basics", True)
    assert decks.set_enabled(GUILD, "mini", True) == ["mini", "upload-basics"]


def test_remove_stops_serving_everywhere_keeps_reviews_and_the_id(decks, tutor):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    decks.publish(GUILD, "upload-basics", True)
    decks.set_enabled(OTHER, "upload-basics", True)
    play, ann = engine_of(tutor).cards, tutor.learner("discord:1")
    playing = play.serve(ann, guild_id=GUILD, card_id=MOVE)
    play.answer(playing.served.serve_id, 0, ann, "copy")
    with pytest.raises(TutorError):
        decks.remove(OTHER, "upload-basics")
    decks.remove(GUILD, "upload-basics")
    for guild in (GUILD, OTHER):
        assert play.serve(ann, guild_id=guild, mode="practice", card_id=MOVE) is None
        assert "upload-basics" not in decks.ids(guild)
    assert tutor.store.reviews.get(playing.served.serve_id) is not None
    assert tutor.store.reviews.state(ann.id, MOVE) is not None
    assert "another server" in str(refused(decks, deck_yaml(), guild=OTHER))


def test_export_yaml_round_trips_and_apkg_has_one_note_per_card(decks, tmp_path):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    name, data = decks.export(GUILD, "upload-basics", "yaml")
    assert name == "upload-basics.yaml"
    assert parse_deck(data.decode(), giveaways=True) == decks.deck(GUILD, "upload-basics")
    bundled_name, bundled = decks.export(GUILD, "mini", "yaml")
    assert parse_deck(bundled.decode(), giveaways=False) == decks.deck(GUILD, "mini")
    name, package = decks.export(GUILD, "upload-basics", "apkg")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        (tmp_path / "c.anki2").write_bytes(archive.read("collection.anki2"))
    with sqlite3.connect(tmp_path / "c.anki2") as conn:
        assert conn.execute("SELECT count(*) FROM notes").fetchone() == (2,)
    with pytest.raises(TutorError):
        decks.export(OTHER, "upload-basics", "yaml")


def test_a_practice_page_comes_back_as_a_draft_and_nothing_is_stored(decks):
    page = REPO / "content/sources/gradient-accumulation.txt"  # the seed page, kept here
    draft = decks.upload(GUILD, page.name, page.read_bytes(), "ann")
    assert isinstance(draft, Draft) and draft.notes and draft.filename.endswith(".yaml")
    assert parse_deck(draft.yaml).id == draft.filename.removesuffix(".yaml")
    assert decks.tutor.store.decks.all() == []
    assert "line 1" in refused(decks, b"not a page at all", filename="x.txt").problems[0]


# -- processes, restarts, crashes -------------------------------------------------------------

def test_a_new_tutor_on_the_same_database_sees_the_deck(decks, tutor, store, clock):
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    restarted = Tutor(Store(store.engine), tutor.decks.bundled, clock=clock)
    ann = restarted.learner("discord:1")
    assert engine_of(restarted).cards.serve(ann, guild_id=GUILD, card_id=MOVE) is not None


def test_another_process_sees_a_new_deck_within_30_seconds(decks, tutor, db_url, clock):
    engine = make_engine(db_url)
    shard = Tutor(Store(engine), tutor.decks.bundled, clock=clock)
    ann = shard.learner("discord:1")
    assert engine_of(shard).cards.serve(ann, guild_id=GUILD, card_id=MOVE) is None
    decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")  # in the other process
    clock.advance(seconds=29)
    assert engine_of(shard).cards.serve(ann, guild_id=GUILD, card_id=MOVE) is None  # not asked yet
    clock.advance(seconds=2)
    assert engine_of(shard).cards.serve(ann, guild_id=GUILD, card_id=MOVE) is not None
    engine.dispose()


def test_a_crash_between_the_two_inserts_stores_nothing(decks, store, monkeypatch):
    def crash(*args):
        raise RuntimeError("power cut between the deck row and its version")

    with monkeypatch.context() as patched:
        patched.setattr(store.decks, "_insert_version", crash)
        with pytest.raises(RuntimeError):
             decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann")
    assert store.decks.all() == [] and store.decks.versions("upload-basics") == []
    assert store.decks.played(GUILD) is None
    assert "upload-basics" not in decks.ids(GUILD)
    assert decks.upload(GUILD, "deck.yaml", deck_yaml(), "ann").new
