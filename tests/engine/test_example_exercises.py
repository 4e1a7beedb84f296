"""Code exercises a community writes (issue 27): the example deck of behaviour cards is
uploaded through the real sandbox, each labelled mistake is recognised by name, another
wrong answer is shown its smallest differing case, and a broken exercise is refused per
card before anything is stored."""

from __future__ import annotations

import io
import itertools
import re
import sqlite3
import zipfile

import pytest

from bot.engine.code_judge import not_judged
from bot.engine.community_decks import CommunityDecks, DeckRejected, Uploaded
from bot.engine.exercises import MAX_EXERCISES
from content.loader import parse_deck
from tests.helpers.engines import engine_of
from tests.helpers.exercises import EXAMPLE, LOSS, MASK, MISTAKEN, RIGHT, SOFTMAX, UNLABELLED

GUILD = 4242
TEXT = EXAMPLE.read_text()


@pytest.fixture
def decks(tutor, sandbox_judge) -> CommunityDecks:
    tutor.code_judge = sandbox_judge
    return engine_of(tutor).decks


@pytest.fixture
def example(decks):
    """The example deck as a server uploaded it."""
    uploaded = decks.upload(GUILD, EXAMPLE.name, EXAMPLE.read_bytes(), "author")
    assert isinstance(uploaded, Uploaded) and uploaded.cards == 3
    return decks.deck(GUILD, "pytorch-exercises")


LEARNERS = itertools.count()  # a learner per answer: each may run 6 a minute


def judged(decks, deck, card_id: str, code: str):
    return decks.tutor.code_judge(deck.card(card_id), code, next(LEARNERS))


def test_each_reference_and_a_right_answer_in_other_words_pass(decks, example):
    for card in example.cards:
        for code in (card.reference, RIGHT[card.id]):
            report = judged(decks, example, card.id, code)
            assert report.passed and report.mistakes == (), (card.id, report)


@pytest.mark.parametrize("mistake", sorted(MISTAKEN))
def test_each_labelled_mistake_is_recognised_by_name(decks, example, mistake):
    card_id, code = MISTAKEN[mistake]
    report = judged(decks, example, card_id, code)
    assert not report.passed and report.mistakes == (mistake,), report


@pytest.mark.parametrize(("card_id", "smallest"), [
    (SOFTMAX, "shape=(3, 5)"),
    (MASK, "shape=(3, 3)"),  # the 1×1 case has no future to hide
    (LOSS, "shape=(2, 4, 5)"),
])
def test_an_unlabelled_wrong_answer_gets_the_smallest_differing_case(decks, example, card_id,
                                                                     smallest):
    report = judged(decks, example, card_id, UNLABELLED[card_id])
    assert not report.passed and report.mistakes == ()
    said, expected, got, places = report.feedback
    assert said.startswith("the smallest case that differs from the reference (")
    assert smallest in said, said
    assert expected.startswith("expected: ") and got.startswith("got: ")
    assert places.startswith("it differs")


def test_the_loss_card_shows_its_0d_loss_as_a_number(decks, example):
    _, expected, got, places = judged(decks, example, LOSS, UNLABELLED[LOSS]).feedback
    assert re.fullmatch(r"expected: `tensor\(\d+\.\d+, dtype=float32\)`", expected), expected
    assert re.fullmatch(r"got: `tensor\(\d+\.\d+, dtype=float32\)`", got), got
    assert re.fullmatch(r"it differs: `expected \d+\.\d+, got \d+\.\d+`", places), places


def test_the_mask_card_says_where_minus_a_billion_is_not_minus_infinity(decks, example):
    places = judged(decks, example, MASK, UNLABELLED[MASK]).feedback[-1]
    assert re.search(r"`at \[0, 1\]: expected -inf, got -1(\.0+)?e\+?0?9`", places), places


def test_a_broken_exercise_is_refused_per_card_and_nothing_is_stored(decks):
    broken = (TEXT.replace("z = x - x.max(dim=-1, keepdim=True).values\n",
                           "z = x - x.maxx(dim=-1, keepdim=True).values\n", 1)
              .replace("masked_fill(future, 0.0)", 'masked_fill(future, float("-inf"))')
              .replace('losses = F.cross_entropy(logits.transpose(1, 2), targets, '
                       'reduction="none",\n', 'losses = F.cross_entropy(logits.transpose(1, 2)'
                       ', targets, reduction="none",\n', 1)
              .replace("((losses * real).sum(dim=1) / real.sum(dim=1)).mean()",
                       "(losses * real).sum() / targets.numel()"))
    with pytest.raises(DeckRejected) as refused:
        decks.upload(GUILD, "broken.yaml", broken.encode(), "author")
    lines = broken.splitlines()
    problems = refused.value.problems
    assert [re.sub(r"^line \d+, card ", "", p) for p in problems] == [
        "pytorch-exercises/stable-softmax: the reference raised on case 1: line 2: "
        "AttributeError: 'Tensor' object has no attribute 'maxx'",
        "pytorch-exercises/causal-mask: version mask_fills_zero cannot be told apart from "
        "the reference on these cases",
        "pytorch-exercises/padded-token-loss: versions padding_in_denominator and "
        "mean_of_sequence_means cannot be told apart on these cases",
    ]
    for problem in problems:  # each names its card's behaviour block
        number = int(problem.split(",")[0].removeprefix("line "))
        assert lines[number - 1].strip() == "behaviour:", problem
    assert "pytorch-exercises" not in {s.deck_id for s in decks.summaries(GUILD)}


def test_without_a_sandbox_a_deck_of_exercises_is_refused(tutor):
    tutor.code_judge = None
    with pytest.raises(DeckRejected) as refused:
        engine_of(tutor).decks.upload(GUILD, EXAMPLE.name, EXAMPLE.read_bytes(), "author")
    assert "runs no code" in str(refused.value) and "nothing was stored" in str(refused.value)
    assert tutor.store.decks.all() == []


def test_a_deck_with_too_many_exercises_is_refused_before_any_is_run(tutor):
    tutor.code_judge = None  # nothing is run: the count comes first
    start = TEXT.index("  - id: pytorch-exercises/causal-mask")
    card = TEXT[start:TEXT.index("  - id: pytorch-exercises/padded-token-loss")]
    many = TEXT + "".join(card.replace("causal-mask", f"mask-{i}") for i in range(MAX_EXERCISES))
    with pytest.raises(DeckRejected) as refused:
        engine_of(tutor).decks.upload(GUILD, "many.yaml", many.encode(), "author")
    [problem] = refused.value.problems
    assert problem.endswith(f"the deck has {MAX_EXERCISES + 3} behaviour cards; at most "
                            f"{MAX_EXERCISES} are accepted (each is tried in the sandbox "
                            "before the deck is stored)")


def test_the_exercises_export_as_yaml_and_as_anki(decks, example, tmp_path):
    name, data = decks.export(GUILD, "pytorch-exercises", "yaml")
    assert parse_deck(data.decode(), giveaways=True) == example
    name, package = decks.export(GUILD, "pytorch-exercises", "apkg")
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        (tmp_path / "c.anki2").write_bytes(archive.read("collection.anki2"))
    with sqlite3.connect(tmp_path / "c.anki2") as conn:
        fields = [row[0] for row in conn.execute("SELECT flds FROM notes")]
    assert len(fields) == 3
    for card, note in zip(example.cards, fields, strict=True):
        assert card.prompt.split(":")[0] in note  # the prompt (HTML-escaped past its start)
        assert "Reference" in note and card.behaviour.entry in note


def test_a_new_version_that_changes_an_exercise_must_say_its_meaning_changed(decks, example):
    bumped = TEXT.replace("version: 1\n", "version: 2\n", 1)
    start = bumped.index("  - id: pytorch-exercises/causal-mask")

    def edited(content_rev: int) -> bytes:
        card = bumped[start:].replace("rev: 1\n", f"rev: 2\n    content_rev: {content_rev}\n",
                                      1).replace("(1, 1), (3, 3),", "(1, 1), (4, 4),", 1)
        return (bumped[:start] + card).encode()

    with pytest.raises(DeckRejected) as refused:  # "a typo fix": progress kept
        decks.upload(GUILD, EXAMPLE.name, edited(1), "author")
    assert any("(it judges code by another exercise (its reference, cases or versions "
               "changed)) but its content_rev is still 1" in p for p in refused.value.problems)
    assert decks.upload(GUILD, EXAMPLE.name, edited(2), "author").version == 2


def test_a_sandbox_that_never_answers_stores_nothing_and_says_so(tutor):
    class Silent:
        def vet(self, card, server):
            raise not_judged("timeout")

    tutor.code_judge = Silent()
    with pytest.raises(DeckRejected) as refused:
        engine_of(tutor).decks.upload(GUILD, EXAMPLE.name, EXAMPLE.read_bytes(), "author")
    assert "could not be tried (the code runner did not answer in time)" in str(refused.value)
    assert tutor.store.decks.all() == []
