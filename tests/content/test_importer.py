"""The practice-page importer: a flagged, loadable draft deck from a page in the seed format."""

from __future__ import annotations

import re

import pytest
import yaml

from content.importer import import_file, import_page
from content.loader import load_deck, parse_deck
from content.schema import ChoiceCard, FillInCard
from tests.helpers.paths import REPO

SEED = REPO / "content" / "sources" / "gradient-accumulation.txt"
CANONICAL = REPO / "content" / "decks" / "gradient-accumulation.yaml"

SYNTHETIC = """\
Tensors on the GPU - Interactive Code Practice

Practice - 1 Task

1fill in blank

easy

Complete the code to move the tensor to the GPU and read its shape.

Python

x = x.[1]("cuda")
print(x.[2])

Drag options to blanks, or click blank then click option'

Ato

Bshape

Csize

Attempts:

3 left

💡 Hint

Common Mistakes

Calling size without parentheses

Using cuda() with a string argument

Call to() with the device name, then read the shape attribute.

Practice

1. What does x.to("cuda") return?

medium

A. A copy of x on the GPU

B. None, because x is moved in place

Solution

1. Step 1: Read the documentation

   to() returns a new tensor and leaves x where it was.

2. Final Answer:

   A copy of x on the GPU -> Option A

3. Quick Check:

   to() is not in place [OK]

Hint: It is a copy on the GPU [OK]

Common Mistakes:

• Thinking to() works in place
• Confusing to() with copy_()
"""


@pytest.fixture(scope="module")
def seed() -> tuple[str, list[str]]:
    return import_page(SEED.read_text(encoding="utf-8"), deck_id="gradient-accumulation",
                       source="content/sources/gradient-accumulation.txt")


@pytest.fixture(scope="module")
def seed_deck(seed):
    return parse_deck(seed[0], "<draft>")


def test_seed_draft_is_yaml_and_loads_cleanly(seed, seed_deck):
    text, notes = seed
    data = yaml.safe_load(text)
    assert data["id"] == "gradient-accumulation"
    assert data["title"] == "Gradient accumulation in PyTorch"
    assert seed_deck.id == "gradient-accumulation"
    assert not [note for note in notes if note.startswith("invalid")]
    assert text.startswith("# DRAFT") and "# GUESS:" in text


def test_seed_cards_blanks_and_correct_options(seed_deck):
    fills = [c for c in seed_deck.cards if isinstance(c, FillInCard)]
    choices = [c for c in seed_deck.cards if isinstance(c, ChoiceCard)]
    assert (len(fills), len(choices), len(seed_deck.cards)) == (5, 5, 10)
    assert [len(c.blanks) for c in fills] == [1, 1, 1, 2, 3]
    assert [c.source for c in fills] == [f"page task {n}" for n in range(1, 6)]
    letters = ["ABCD"[[o.correct for o in c.options].index(True)] for c in choices]
    assert letters == ["D", "C", "B", "A", "A"]
    assert [len(c.options) for c in choices] == [4, 4, 4, 4, 4]
    assert fills[0].code == "optimizer.[[b1]]()"
    assert [chip.text for chip in fills[4].chips] == ["accumulation_steps", "backward", "step"]


# Seed fill-in tasks whose blank the curated deck asks differently, with the reason in
# the card's flags: step-frequency's seed chips were answered by "the chip named after the
# topic", so its blank asks for the number (64 samples per update / 16 per micro-batch).
REASKED = {"gradient-accumulation/step-frequency": ["4"]}


def test_seed_answers_match_the_hand_curated_deck(seed_deck):
    canonical = load_deck(CANONICAL)

    def answers(card):
        return [{c.id: c.text for c in card.chips}[b.answer] for b in card.blanks]

    from_seed = [card for card in canonical.cards
                 if isinstance(card, FillInCard) and card.source.startswith("seed task")]
    drafted = [card for card in seed_deck.cards if isinstance(card, FillInCard)]
    assert len(drafted) == len(from_seed)
    for draft, card in zip(drafted, from_seed, strict=True):
        if card.id in REASKED:
            assert answers(card) == REASKED[card.id] != answers(draft)
            assert any(flag.startswith(f"rev {card.rev}:") for flag in card.flags), card.id
        else:
            assert answers(draft) == answers(card), card.id


def test_one_mistake_per_common_mistakes_line(seed_deck):
    canonical = load_deck(CANONICAL)
    lines = [w for m in canonical.mistakes for w in m.seed_wording]
    titles = [m.title for m in seed_deck.mistakes]
    assert [m.seed_wording for m in seed_deck.mistakes] == [[title] for title in titles]
    assert len(set(titles)) == len(titles) == 26  # the seed's Common Mistakes lines
    # The curated deck keeps each line once, or retires it (test_deck_content.py says why).
    assert len(set(lines)) == len(lines) and set(lines) <= set(titles) and len(lines) >= 25
    for mistake in seed_deck.mistakes:
        assert mistake.explanation.startswith("TODO (review)")
        assert mistake.title in mistake.explanation


def test_every_guess_is_flagged(seed, seed_deck):
    _, notes = seed
    assert notes
    for card in seed_deck.cards:
        assert card.flags, card.id
        assert all(f"{card.id}: {flag}" in notes for flag in card.flags)
        flags = "\n".join(card.flags)
        if isinstance(card, FillInCard):
            assert card.hint == "TODO: write a hint" and "missing: hint" in flags
            assert card.takeaway.startswith("TODO") and "missing: takeaway" in flags
            for blank in card.blanks:
                assert f"for blank {blank.id} from" in flags
                for chip_id, choice in blank.wrong.items():
                    text = next(c.text for c in card.chips if c.id == chip_id)
                    assert f"for wrong chip '{text}' in blank {blank.id}" in flags
                    assert choice.says == f"TODO: say what choosing '{text}' does"
        else:
            for option in card.options:
                if not option.correct:
                    assert f"for wrong option '{option.id}'" in flags
                    assert option.says.startswith("TODO: say what choosing")
    hints = [c.hint for c in seed_deck.cards if isinstance(c, ChoiceCard)]
    assert hints[3] == "Use (i + 1) % N == 0 to delay step until after N batches"
    assert [h.startswith("TODO") for h in hints] == [True, True, True, False, True]
    leaked = [any(f.startswith("leaked:") for f in c.flags) for c in seed_deck.cards[5:]]
    assert leaked == [True, True, True, False, True]


def test_seed_quirks_are_flagged(seed_deck):
    task5, mcq2 = seed_deck.cards[4], seed_deck.cards[6]
    assert any("skip letter C" in flag for flag in task5.flags)
    assert any(flag.startswith("check indentation") for flag in mcq2.flags)
    for option in mcq2.options:  # kept as on the page: no indentation
        assert option.code and all(not line[:1].isspace() for line in option.code.splitlines())
    assert "(i + 1) % 4 == 0" in mcq2.solution[1].detail
    assert "i+1 %" not in mcq2.solution[1].detail
    assert any("solution step 2" in flag for flag in mcq2.flags)
    correct = next(o for o in mcq2.options if o.correct)
    assert correct.text.startswith("Code that calls loss.backward() every step")
    assert any("Fix" in flag for flag in seed_deck.cards[2].flags)


def test_synthetic_page():
    text, notes = import_page(SYNTHETIC, deck_id="tensors", title="Tensors")
    deck = parse_deck(text)
    assert deck.title == "Tensors"
    fill, choice = deck.cards
    assert fill.code == 'x = x.[[b1]]("cuda")\nprint(x.[[b2]])'
    assert [b.answer for b in fill.blanks] == ["to", "shape"]
    assert choice.options[0].correct and choice.takeaway == "to() is not in place"
    assert choice.hint.startswith("TODO") and "# GUESS: placeholder hint" in text
    assert [s.title for s in choice.solution] == ["Read the documentation", "Answer"]
    # Two lines but one wrong option: the second line is kept as wording of the first.
    assert len(deck.mistakes) == 3
    assert any(note.startswith("merged:") for note in notes)


def test_a_hint_that_gives_the_answer_away_is_replaced():
    page = SYNTHETIC.replace("💡 Hint\n", "💡 Hint: call to() and read shape\n")
    text, _ = import_page(page, deck_id="tensors")
    fill = parse_deck(text).cards[0]
    assert fill.hint == "TODO: write a hint"
    assert any(flag.startswith("leaked:") for flag in fill.flags)


def test_answers_from_code_context_when_the_explanation_names_other_chips():
    page = SYNTHETIC.replace("the shape attribute.", "the shape attribute, not size.").replace(
        'x = x.[1]("cuda")\nprint(x.[2])', '    x = x.[1]("cuda")\n    print(x.[2])')
    text, _ = import_page(page, deck_id="tensors")
    fill = parse_deck(text).cards[0]
    assert fill.code == 'x = x.[[b1]]("cuda")\nprint(x.[[b2]])'  # dedented
    assert [b.answer for b in fill.blanks] == ["to", "shape"]
    assert "guessed: answer 'to' for blank b1 from its code context in the explanation" in (
        fill.flags)
    assert any("blank b2 from the explanation (mentioned there, but so are other chips)" in flag
               for flag in fill.flags)


def _line(page: str, needle: str) -> int:
    return page[: page.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        ("2. Final Answer:\n\n   A copy of x on the GPU -> Option A\n\n", "", "3. Quick Check",
         "expected 'N. Final Answer:', found '3. Quick Check:'"),
        ("-> Option A", "-> Option C", "2. Final Answer",
         "the final answer names option C, but question 1 has options A, B"),
        ("-> Option A", "(option A)", "2. Final Answer",
         "expected a final answer like '... -> Option C'"),
        ("Bshape\n\nCsize\n\n", "", "Attempts:", "expected at least two lettered chips"),
        ("\nmedium\n", "\n", "A. A copy", "expected a difficulty (easy, medium or hard)"),
        ("print(x.[2])", "print(x.[3])", "1fill in blank", "code has blanks [1, 3]"),
    ],
)
def test_malformed_pages_name_the_line(old, new, needle, message):
    assert old in SYNTHETIC
    page = SYNTHETIC.replace(old, new)
    with pytest.raises(ValueError) as info:
        import_page(page, deck_id="tensors")
    assert str(info.value).startswith(f"line {_line(page, needle)}: ")
    assert message in str(info.value)


def test_pages_without_tasks_and_bad_deck_ids():
    with pytest.raises(ValueError, match=r"^line 1: the page is empty"):
        import_page("\n\n", deck_id="x")
    with pytest.raises(ValueError, match=r"^line 3: expected a task header.*end of the page"):
        import_page("Title\n\nJust some prose.\n", deck_id="x")
    with pytest.raises(ValueError, match="not a slug"):
        import_page(SYNTHETIC, deck_id="Not A Slug")


def test_import_file_writes_a_loadable_draft(tmp_path):
    page = tmp_path / "Tensors on GPU.txt"
    page.write_text(SYNTHETIC, encoding="utf-8")
    out = tmp_path / "draft.yaml"
    notes = import_file(page, out)
    deck = load_deck(out)
    assert deck.id == "tensors-gpu" and deck.source == str(page)
    assert notes and all(re.match(r"[a-z]+: |tensors-gpu/", note) for note in notes)
    with pytest.raises(FileExistsError):
        import_file(page, out, deck_id="tensors")
    import_file(page, out, deck_id="tensors", overwrite=True)
    assert load_deck(out).id == "tensors"
