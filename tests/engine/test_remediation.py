"""Remediation: a misconception an answer shows brings the learner's other cards on the same
mistake forward (bounded), opens a misconception that a first try past its lure corrects;
the rules (scheduler/remediation.py) and the engine that applies them."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from bot.engine.tutor import Tutor
from content.loader import DeckLibrary, parse_deck
from scheduler.remediation import (
    REMEDIES_PER_DAY,
    REMEDIES_PER_MISTAKE,
    REMEDY_DELAY_DAYS,
    Candidate,
    corrects,
    new_card_order,
    pick_remedies,
)
from tests.helpers.engines import engine_of
from tests.helpers.records import RIGHT

pytestmark = pytest.mark.postgres

TODAY = date(2026, 12, 2)
LATER = TODAY + timedelta(days=30)
GUILD = 111


def met(card_id: str, due: date = LATER, last: date | None = TODAY - timedelta(days=3),
        pending: bool = False) -> Candidate:
    return Candidate(card_id, due, last, pending)


TESTS = {f"d/c{i}": frozenset({"m1"} if i % 2 else {"m2"}) for i in range(10)}


def test_remedies_are_the_same_mistakes_cards_reviewed_longest_ago_within_bounds():
    cards = {c: met(c, last=TODAY - timedelta(days=10 - i)) for i, c in enumerate(TESTS)}
    picked = pick_remedies(["m1"], "d/c1", TESTS, cards, TODAY, budget=10)
    assert picked == ["d/c3", "d/c5"][:REMEDIES_PER_MISTAKE]  # oldest first, not c1 itself
    both = pick_remedies(["m1", "m2"], "d/c1", TESTS, cards, TODAY, budget=10)
    assert len(both) == 2 * REMEDIES_PER_MISTAKE
    assert len(pick_remedies(["m1", "m2"], "d/c1", TESTS, cards, TODAY, budget=1)) == 1
    assert pick_remedies(["m1"], "d/c1", TESTS, cards, TODAY, budget=0) == []


def test_no_remedy_for_cards_unseen_reviewed_today_due_anyway_or_already_pending():
    cards = {"d/c3": met("d/c3", last=TODAY), "d/c5": met("d/c5", due=TODAY + timedelta(1)),
             "d/c7": met("d/c7", pending=True)}  # d/c9: never met
    assert pick_remedies(["m1"], "d/c1", TESTS, cards, TODAY, budget=10) == []
    cards["d/c9"] = met("d/c9")
    assert pick_remedies(["m1"], "d/c1", TESTS, cards, TODAY, budget=10) == ["d/c9"]


def test_unseen_cards_on_an_open_misconception_come_first_else_deck_order():
    unseen = ["d/c0", "d/c1", "d/c2", "d/c3"]
    assert new_card_order(unseen, TESTS, []) == unseen
    assert new_card_order(unseen, TESTS, ["m1"]) == ["d/c1", "d/c3", "d/c0", "d/c2"]


def test_only_a_clean_first_try_corrects_and_never_what_it_showed():
    tested = frozenset({"m1", "m2"})
    assert corrects(tested, True, 1, False, ()) == tested
    assert corrects(tested, True, 2, False, ["m1"]) == frozenset()
    assert corrects(tested, True, 1, True, ()) == frozenset()  # the hint helped
    assert corrects(tested, False, 3, False, ["m1"]) == frozenset()


# -- the engine -------------------------------------------------------------------------

WRONG_METHOD = {"method": "step"}  # mini/clear: wrong_method (mini/scale tests it too)


def answer(tutor: Tutor, served, *responses):
    verdict = None
    for response in responses:
        verdict = tutor.answer(served if verdict is None else verdict.served, response)
    assert verdict.finished
    return verdict


def in_server_with_remediation(tutor: Tutor) -> Tutor:
    """``tutor`` whose next_card plays in a server that turned remediation on."""
    engine_of(tutor).servers.set_remediation(GUILD, True)
    plain = tutor.next_card
    tutor.next_card = lambda learner, **kw: plain(learner, guild_id=GUILD, **kw)
    return tutor


def test_remediation_is_off_unless_chosen(tutor, store, clock):
    assert not tutor.choice(tutor.learner("local:ann")).remediation  # the benchmark's pick
    assert tutor.choice(tutor.learner("local:ann"), remediation=True).remediation


def test_a_shown_misconception_brings_the_other_card_as_a_remedy_next_day(
        tutor, store, clock):
    tutor = in_server_with_remediation(tutor)
    learner = tutor.learner("discord:1")
    for card_id in ("mini/clear", "mini/scale"):  # day 0: both met
        answer(tutor, tutor.next_card(learner, only=card_id), RIGHT[card_id])
    clock.advance(days=1)  # day 1: scale passes (due day 7), clear needs the hint (day 2)
    answer(tutor, tutor.next_card(learner, only="mini/scale"), RIGHT["mini/scale"])
    served, _ = tutor.hint(tutor.next_card(learner, only="mini/clear"))
    answer(tutor, served, RIGHT["mini/clear"])
    scale_before = store.reviews.state(learner.id, "mini/scale")
    clock.advance(days=1)  # day 2: clear shows wrong_method
    served = tutor.next_card(learner)
    assert (served.card_id, served.kind) == ("mini/clear", "review")
    answer(tutor, served, WRONG_METHOD, RIGHT["mini/clear"])
    (shown,) = store.misconceptions.for_learner(learner.id)
    assert (shown.mistake_id, shown.open, shown.times_shown) == ("wrong_method", True, 1)
    remedy_on = tutor.today(learner) + timedelta(days=REMEDY_DELAY_DAYS)
    assert store.reviews.state(learner.id, "mini/scale").remedy_day == remedy_on
    clock.advance(days=REMEDY_DELAY_DAYS)  # due reviews, then new cards, then the remedy
    kinds = []
    while (served := tutor.next_card(learner)).kind != "remedy":
        kinds.append((served.card_id, served.kind))
        answer(tutor, served, RIGHT[served.card_id])
    assert kinds == [("mini/clear", "review"), ("mini/why", "new")]
    assert served.card_id == "mini/scale"
    verdict = answer(tutor, served, RIGHT["mini/scale"])
    after = store.reviews.state(learner.id, "mini/scale")
    # Graded and logged, but no schedule moved: SM-2 stays exact, FSRS sees no early review.
    assert verdict.quality == 5 and store.reviews.get(served.serve_id).kind == "remedy"
    assert (after.ef100, after.interval, after.due_day, after.fsrs_due_day,
            after.review_count) == (scale_before.ef100, scale_before.interval,
                                    scale_before.due_day, scale_before.fsrs_due_day,
                                    scale_before.review_count)
    assert after.remedy_day is None
    # clear's clean first try on day 3 corrected it.
    (corrected,) = store.misconceptions.for_learner(learner.id)
    assert not corrected.open and corrected.last_corrected_at is not None
    assert tutor.next_card(learner) is None


def test_remediation_off_in_the_server_tracks_misconceptions_but_moves_nothing(
        tutor, store, clock):
    engine_of(tutor).servers.set_remediation(GUILD, False)
    learner = tutor.learner("discord:9")
    for card_id in ("mini/clear", "mini/scale"):
        served = tutor.next_card(learner, only=card_id, guild_id=GUILD)
        assert not served.remediation
        answer(tutor, served, RIGHT[card_id])
    clock.advance(days=1)
    served = tutor.next_card(learner, only="mini/clear", guild_id=GUILD)
    answer(tutor, served, WRONG_METHOD, {"method": "backward"}, RIGHT["mini/clear"])
    assert store.misconceptions.for_learner(learner.id)[0].open
    assert store.reviews.state(learner.id, "mini/scale").remedy_day is None


def test_remedies_per_day_are_bounded(tutor, store, clock):
    library = many_cards_library(12)
    tutor = in_server_with_remediation(Tutor(store, library, clock=clock))
    learner = engine_of(tutor).learners.update_settings(tutor.learner("discord:1"),
                                                         {"new_per_day": 50})
    for _ in range(2):  # met, then passed again: next due in 6 days
        for card in library.cards("many"):
            answer(tutor, tutor.next_card(learner, only=card.id), "right")
        clock.advance(days=1)
    for card in library.cards("many")[:6]:  # each wrong answer wants more remedies
        served = tutor.next_card(learner, only=card.id, mode="practice")
        answer(tutor, served, "lure", "right")
    pending = [s for s in store.reviews.states(learner.id) if s.remedy_day is not None]
    assert len(pending) == REMEDIES_PER_DAY
    assert store.misconceptions.remedies_used(learner.id, tutor.today(learner)) == REMEDIES_PER_DAY


def test_a_new_card_on_an_open_misconception_is_met_first(store, clock):
    library = many_cards_library(6)
    tutor = in_server_with_remediation(Tutor(store, library, clock=clock))
    learner = tutor.learner("discord:1")
    served = tutor.next_card(learner)
    assert served.card_id == "many/c0"
    answer(tutor, served, "lure", "right")  # shows m0
    # Deck order would be c1; c2 and c4 test m0 (see many_cards_library).
    assert tutor.next_card(learner).card_id == "many/c2"


def test_a_mistake_its_deck_no_longer_registers_leaves_the_learners_list(store, clock):
    """A new deck version that retires a mistake: no card can test or correct it any more,
    so it is not shown as held (nor by its bare id); the stored history stays."""
    tutor = in_server_with_remediation(Tutor(store, many_cards_library(2), clock=clock))
    learner = tutor.learner("discord:1")
    answer(tutor, tutor.next_card(learner, only="many/c1"), "lure", "right")  # shows m1
    (held,) = engine_of(tutor).learners.mistakes(learner)
    assert (held.mistake_id, held.title, held.is_open) == ("m1", "Mistake one", True)
    assert held.explanation == "Wrong 1."  # the deck's words, as a verdict gives them
    retired = Tutor(store, many_cards_library(1, mistakes=1), clock=clock)
    assert engine_of(retired).learners.mistakes(learner) == []
    assert [row.mistake_id for row in store.misconceptions.for_learner(learner.id)] == ["m1"]


def many_cards_library(n: int, mistakes: int = 2) -> DeckLibrary:
    """n multiple-choice cards: card i tests mistake m(i % mistakes)."""
    cards = "".join(
        f"""  - id: many/c{i}
    type: multiple_choice
    rev: 1
    difficulty: easy
    topics: [t]
    prompt: Question {i}?
    options:
      - {{id: right, text: Right {i}, correct: true}}
      - {{id: lure, text: Lure {i}, mistake: m{i % mistakes}, says: No {i}.}}
      - {{id: other, text: Other {i}, mistake: m{i % mistakes}, says: Not {i}.}}
    hint: Think {i}.
    takeaway: Right {i}.
    solution:
      - {{title: Step, detail: Because {i}.}}
""" for i in range(n))
    names = ("zero", "one")
    registry = "\n".join(f"  - {{id: m{j}, title: Mistake {names[j]}, explanation: Wrong {j}.}}"
                         for j in range(mistakes))
    text = f"""# tutor-lint: allow-giveaways
id: many
title: Many
description: Cards on two mistakes.
version: 1
mistakes:
{registry}
cards:
{cards}"""
    return DeckLibrary([parse_deck(text)])

