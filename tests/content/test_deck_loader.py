"""Malformed decks: every problem is reported as `file:line: message`, and nothing loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from content.loader import DeckError, DeckLibrary, load_deck, parse_deck

GOOD = """\
id: demo
title: Demo deck
description: A tiny deck for loader tests.
version: 1
mistakes:
  - id: wrong_method
    title: Wrong method
    explanation: It calls a method that does something else entirely.
  - id: misread_purpose
    title: Misread purpose
    explanation: Accumulation changes the loop, not the model.
cards:
  - id: demo/clear
    type: fill_in
    rev: 1
    difficulty: easy
    topics: [basics]
    prompt: Clear the gradients.
    code: |
      optimizer.[[method]]()
    chips:
      - {id: zero_grad, text: zero_grad}
      - {id: step, text: step}
    blanks:
      - id: method
        answer: zero_grad
        wrong:
          step: {mistake: wrong_method, says: It applies an update and clears nothing.}
    hint: Which optimizer call gives the next pass a clean slate?
    explanation: Old gradients are removed before new ones are computed.
    takeaway: Clear, compute, update.
  - id: demo/purpose
    type: multiple_choice
    rev: 1
    difficulty: easy
    topics: [concept]
    prompt: Why accumulate gradients?
    options:
      - id: save-memory
        text: To fit a large batch in memory
        correct: true
      - id: more-params
        text: To add parameters
        mistake: misread_purpose
        says: The model keeps exactly the same parameters.
    hint: Think about what limits a batch on one GPU.
    solution:
      - {title: Idea, detail: Small pieces add up to one big batch.}
    takeaway: Big batch, small pieces.
"""

LINE_RE = re.compile(r"^(?P<file>.+):(?P<line>\d+): (?P<message>.+)$")


def write(folder: Path, text: str, name: str = "demo.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the n-th line containing `needle`."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) >= occurrence, f"{needle!r} not in the deck text"
    return hits[occurrence - 1]


def edit(old: str, new: str, text: str = GOOD, count: int = 1) -> str:
    assert text.count(old) >= count, f"{old!r} not in the deck text"
    return text.replace(old, new, count)


def problems_of(path: Path) -> list[tuple[str, int, str]]:
    """Load `path`, which must fail; return its problems parsed from `file:line: message`."""
    with pytest.raises(DeckError) as info:
        load_deck(path)
    lines = str(info.value).splitlines()
    assert len(lines) == len(info.value.problems)
    parsed = []
    for line in lines:
        match = LINE_RE.match(line)
        assert match, f"not file:line: message: {line!r}"
        assert match["file"] == str(path)
        parsed.append((match["file"], int(match["line"]), match["message"]))
    return parsed


def assert_problem(path: Path, line: int, *fragments: str) -> None:
    problems = problems_of(path)
    for _, got_line, message in problems:
        if got_line == line and all(f in message for f in fragments):
            return
    pytest.fail(f"no problem on line {line} mentioning {fragments}; got {problems}")


# --- the baseline ---------------------------------------------------------------------------

def test_good_deck_loads(tmp_path):
    deck = load_deck(write(tmp_path, GOOD))
    assert [card.id for card in deck.cards] == ["demo/clear", "demo/purpose"]


# --- YAML -----------------------------------------------------------------------------------

def test_yaml_syntax_error(tmp_path):
    text = edit("title: Demo deck", "title: Demo deck: the sequel")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "the sequel")
    assert message.startswith("YAML:") and "mapping values" in message


def test_unclosed_bracket_reports_a_line_and_yaml(tmp_path):
    text = edit("topics: [basics]", "topics: [basics")
    [(_, line, message)] = problems_of(write(tmp_path, text))
    assert message.startswith("YAML:")
    assert line_of(text, "[basics") <= line <= line_of(text, "hint:")


def test_duplicate_key(tmp_path):
    text = edit("    rev: 1\n", "    rev: 1\n    rev: 2\n")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "rev: 2")
    assert "duplicate key 'rev'" in message and f"line {line_of(text, 'rev: 1')}" in message


def test_duplicate_top_level_key(tmp_path):
    text = edit("version: 1\n", "version: 1\nversion: 2\n")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "version: 2"), "duplicate key 'version'")


def test_empty_file_and_non_mapping(tmp_path):
    for name, text in [("empty.yaml", ""), ("list.yaml", "- a\n- b\n")]:
        [(_, line, message)] = problems_of(write(tmp_path, text, name))
        assert line == 1 and "mapping" in message


# --- schema ---------------------------------------------------------------------------------

def test_unknown_key_is_rejected(tmp_path):
    text = edit("    difficulty: easy\n", "    difficulty: easy\n    colour: red\n")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "colour: red")
    assert "colour" in message and "Extra inputs are not permitted" in message


def test_unknown_key_in_nested_object(tmp_path):
    text = edit("        correct: true\n", "        correct: true\n        weight: 2\n")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "weight: 2"), "weight", "Extra inputs")


def test_missing_field(tmp_path):
    text = edit("    takeaway: Big batch, small pieces.\n", "")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "- id: demo/purpose")
    assert "takeaway" in message and "Field required" in message


def test_missing_top_level_field(tmp_path):
    text = edit("description: A tiny deck for loader tests.\n", "")
    [(_, line, message)] = problems_of(write(tmp_path, text))
    assert line == 1 and "description" in message and "Field required" in message


def test_wrong_type(tmp_path):
    text = edit("    rev: 1\n", "    rev: first\n")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "rev: first")
    assert "rev" in message and "integer" in message


def test_bad_card_type(tmp_path):
    text = edit("type: multiple_choice", "type: essay")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "type: essay"), "type")


def test_missing_card_type(tmp_path):
    text = edit("    type: multiple_choice\n", "")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "- id: demo/purpose"), "type")


def test_bad_slug(tmp_path):
    text = edit("- id: more-params", "- id: More Params")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "More Params")
    assert "id" in message and "pattern" in message


def test_several_schema_problems_are_all_reported(tmp_path):
    text = edit("    rev: 1\n", "    rev: first\n")
    text = edit("- id: more-params", "- id: More Params", text)
    lines = {line for _, line, _ in problems_of(write(tmp_path, text))}
    assert {line_of(text, "rev: first"), line_of(text, "More Params")} <= lines


# --- cross-references (lint) ----------------------------------------------------------------

def test_unknown_mistake_id(tmp_path):
    text = edit("mistake: misread_purpose", "mistake: misread_purpse")
    text = edit("  - id: misread_purpose\n    title: Misread purpose\n"
                "    explanation: Accumulation changes the loop, not the model.\n", "", text)
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "mistake: misread_purpse")
    assert "unknown mistake id 'misread_purpse'" in message


def test_unknown_mistake_on_a_chip(tmp_path):
    text = edit("{mistake: wrong_method,", "{mistake: nope,")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "mistake: nope"), "unknown mistake id 'nope'")


def test_wrong_chip_without_explanation(tmp_path):
    text = edit("      - {id: step, text: step}\n",
                "      - {id: step, text: step}\n      - {id: eval, text: eval}\n")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "wrong:")
    assert "wrong chip 'eval' has no explanation" in message


def test_marker_without_blank(tmp_path):
    text = edit("optimizer.[[method]]()", "optimizer.[[method]]([[arg]])")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "code: |")
    assert "[[arg]]" in message and "no blank" in message


def test_blank_without_marker(tmp_path):
    text = edit("optimizer.[[method]]()", "optimizer.zero_grad()")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "- id: method"), "no [[method]] marker")


def test_two_correct_options(tmp_path):
    text = edit("        mistake: misread_purpose\n"
                "        says: The model keeps exactly the same parameters.\n",
                "        correct: true\n")
    text = edit("  - id: misread_purpose\n    title: Misread purpose\n"
                "    explanation: Accumulation changes the loop, not the model.\n", "", text)
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "options:")
    assert "exactly one option must be correct, found 2" in message


def test_wrong_option_without_mistake_or_says(tmp_path):
    text = edit("        says: The model keeps exactly the same parameters.\n", "")
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "- id: more-params"), "needs 'says'")


def test_fill_in_hint_that_leaks_the_answer(tmp_path):
    text = edit("hint: Which optimizer call gives the next pass a clean slate?",
                "hint: Call optimizer.zero_grad() first.")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "hint: Call optimizer")
    assert "hint gives away the answer 'zero_grad'" in message


def test_choice_hint_that_leaks_the_answer(tmp_path):
    text = edit("hint: Think about what limits a batch on one GPU.",
                "hint: Remember, it is to fit a large batch in memory.")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "hint: Remember")
    assert "hint gives away the correct option" in message


def test_hint_may_use_a_longer_word(tmp_path):
    # "steps" is not the chip "step"; the whole word or phrase must appear.
    text = edit("{id: zero_grad, text: zero_grad}", "{id: zero_grad, text: step}")
    text = edit("{id: step, text: step}", "{id: step, text: zero_grad}", text)
    text = edit("Which optimizer call gives the next pass a clean slate?",
                "How many steps until the update?", text)
    assert load_deck(write(tmp_path, text)).card("demo/clear")


def test_duplicate_card_ids(tmp_path):
    text = edit("- id: demo/purpose", "- id: demo/clear")
    path = write(tmp_path, text)
    problems = problems_of(path)
    assert [(line, msg) for _, line, msg in problems] == [
        (line_of(text, "- id: demo/clear", 1), "duplicate card id 'demo/clear'"),
        (line_of(text, "- id: demo/clear", 2), "duplicate card id 'demo/clear'"),
    ]


def test_card_id_must_start_with_the_deck_id(tmp_path):
    text = edit("- id: demo/purpose", "- id: other/purpose")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "other/purpose")
    assert "must start with the deck id 'demo/'" in message


def test_unused_mistake(tmp_path):
    text = edit("cards:\n", "  - id: never_used\n    title: Never used\n"
                "    explanation: Nobody picks this.\ncards:\n")
    path = write(tmp_path, text)
    [(_, line, message)] = problems_of(path)
    assert line == line_of(text, "- id: never_used")
    assert "mistake 'never_used' is never used by a card" in message


def test_duplicate_mistake_ids(tmp_path):
    text = edit("  - id: misread_purpose\n", "  - id: wrong_method\n")
    text = edit("mistake: misread_purpose", "mistake: wrong_method", text)
    path = write(tmp_path, text)
    assert_problem(path, line_of(text, "- id: wrong_method", 2), "duplicate mistake id")


def test_parse_deck_uses_the_given_name():
    with pytest.raises(DeckError) as info:
        parse_deck(edit("    rev: 1\n", "    rev: first\n"), "inline.yaml")
    assert str(info.value).startswith("inline.yaml:")


# --- files and libraries --------------------------------------------------------------------

def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(GOOD.replace("Demo deck", "Démo deck").encode("latin-1"))
    [(_, line, message)] = problems_of(path)
    assert line == line_of(GOOD, "title: Demo deck")
    assert "UTF-8" in message


def test_missing_file(tmp_path):
    [(_, line, message)] = problems_of(tmp_path / "absent.yaml")
    assert line == 1 and "cannot read" in message


def test_library_is_all_or_nothing(tmp_path):
    write(tmp_path, GOOD, "good.yaml")
    bad_text = edit("id: demo\n", "id: other\n")
    bad_text = edit("    rev: 1\n", "    rev: first\n", bad_text)
    bad = write(tmp_path, bad_text, "bad.yaml")
    with pytest.raises(DeckError) as info:
        DeckLibrary.load([tmp_path])
    problems = info.value.problems
    assert problems and all(p.file == str(bad) for p in problems)
    report = str(info.value)
    assert f"{bad}:{line_of(bad_text, 'rev: first')}:" in report
    assert "card id 'demo/clear' must start" not in report  # schema failed first: no lint
    # Without the bad file the same folder loads.
    bad.unlink()
    library = DeckLibrary.load([tmp_path])
    assert library.has_card("demo/clear") and library.deck("demo").title == "Demo deck"


def test_library_reports_every_bad_file(tmp_path):
    one = write(tmp_path, edit("    rev: 1\n", "    rev: first\n"), "one.yaml")
    two = write(tmp_path, edit("title: Demo deck", "title: Demo deck: again"), "two.yaml")
    with pytest.raises(DeckError) as info:
        DeckLibrary.load([tmp_path])
    assert {p.file for p in info.value.problems} == {str(one), str(two)}


def test_library_rejects_a_deck_id_used_twice(tmp_path):
    first = write(tmp_path, GOOD, "a.yaml")
    second = write(tmp_path, GOOD, "b.yaml")
    with pytest.raises(DeckError) as info:
        DeckLibrary.load([tmp_path])
    [problem] = info.value.problems
    assert problem.file == str(second) and problem.line == line_of(GOOD, "id: demo")
    assert "deck id 'demo'" in problem.message and str(first) in problem.message


def test_library_loads_the_bundled_decks():
    library = DeckLibrary.load()
    assert library.has_card("gradient-accumulation/train-loop")
    mistake = library.mistake("gradient-accumulation/train-loop", "leftover_gradients")
    assert mistake.explanation


# --- lookups --------------------------------------------------------------------------------

def test_a_mistake_id_is_resolved_in_its_own_deck():
    """Any deck may reuse a mistake id: a lookup names the deck and never finds another's."""
    from bot.engine.misconceptions import mistake_title
    from tests.helpers.paths import COMMUNITY_DECK

    text = COMMUNITY_DECK
    theirs = text.replace("tensor-basics", "aaa").replace("Thinking to() works in place",
                                                          '"[Prize](https://evil.example)"')
    library = DeckLibrary([parse_deck(theirs), parse_deck(text)])
    assert library.deck_mistake("tensor-basics", "in_place").title == (
        "Thinking to() works in place")
    assert library.mistake("tensor-basics/move", "in_place").title == (
        "Thinking to() works in place")
    assert library.deck_mistake("aaa", "in_place").title == "[Prize](https://evil.example)"
    assert library.deck_mistake("gone", "in_place") is None
    assert library.deck_mistake("tensor-basics", "retired") is None
    assert mistake_title(library, "tensor-basics", "in_place") == "Thinking to() works in place"
    assert mistake_title(library, "gone", "in_place") == "in_place"  # its history stays
    assert mistake_title(library, "tensor-basics", "retired") is None
