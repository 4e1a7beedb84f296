"""Authoring a deck of behaviour exercises (issue 40): `tutor deck validate` refuses each
fault an author makes with a reason that says what to do (compiling needs no sandbox; the
trial runs in a real one, as publish runs it, or validate says it did not), and two decks,
the example and tests/fixtures/python-exercises.yaml, validate and publish at the first try."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers.cli import tutor
from tests.helpers.exercises import EXAMPLE
from tests.helpers.paths import FIXTURES, REPO

OWN = FIXTURES / "python-exercises.yaml"
TEXT = OWN.read_text()
TRIED = "behaviour exercises were tried in the sandbox, as publish tries them: no problems"
TRIAL_S = 240  # a run that tries exercises in the sandbox: three runs each, on a busy host


def written(tmp_path, old: str, new: str):
    """The deck with one edit, as a file."""
    assert TEXT.count(old) == 1, old
    path = tmp_path / "deck.yaml"
    path.write_text(TEXT.replace(old, new))
    return path


def line_of(path, text: str, after: str = "") -> int:
    """The line of `text` (the first after the line `after`, when given)."""
    lines = path.read_text().splitlines()
    start = lines.index(after) if after else 0
    return lines.index(text, start) + 1


# (edit: old, new), (the line the problem is on, the first after), the problem
FAULTS = {
    "syntax-in-reference": (
        ("          if len(ordered) % 2:\n", "          if len(ordered) % 2\n"),
        ("    reference: |", ""),
        "the reference does not compile (its line 4 `if len(ordered) % 2`: SyntaxError: "
        "expected ':'): fix the code"),
    "syntax-in-a-version": (
        ("range(0, len(xs) - n + 1, n)]\n", "range(0, len(xs) - n + 1, n\n"),
        ("        chunks_drop_tail: |", ""),
        "version chunks_drop_tail does not compile (its line 2 `return [xs[i:i + n] for i in "
        "range(0, len(xs) - n + 1, n`: SyntaxError: '(' was never closed): fix the code"),
    "entry-missing-in-reference": (
        ("    reference: |\n      def word_counts(text):\n",
         "    reference: |\n      def count_words(text):\n"),
        ("    reference: |", "  - id: python-exercises/word-counts"),
        "the reference does not define word_counts, the card's entry: define it at the top "
        "level (`def word_counts(...):` or `class word_counts:`), as the learner's code must"),
    "entry-missing-in-a-version": (
        ("        median_even_upper: |\n          def median(xs):\n",
         "        median_even_upper: |\n          def middle(xs):\n"),
        ("        median_even_upper: |", ""),
        "version median_even_upper does not define median, the card's entry: define it at "
        "the top level (`def median(...):` or `class median:`), as the learner's code must"),
    "cases-not-defined": (
        ("        def cases(rng):\n            made = []\n            for size, n",
         "        def make(rng):\n            made = []\n            for size, n"),
        ("      cases: |", "  - id: python-exercises/chunks"),
        "cases does not define cases(rng): write `def cases(rng):` returning a list of "
        "argument tuples built from rng"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_validate_refuses_code_that_cannot_run_without_a_sandbox(tmp_path, fault):
    (old, new), (at, after), problem = FAULTS[fault]
    path = written(tmp_path, old, new)
    result = tutor("deck", "validate", str(path))
    assert result.returncode == 1
    [said] = result.stdout.splitlines()  # the line, the card it is in, the problem
    assert re.fullmatch(rf"{re.escape(str(path))}:{line_of(path, at, after)}: card "
                        rf"python-exercises/[a-z-]+: {re.escape(problem)}", said), said
    assert "valid" not in result.stderr and "sandbox" not in result.stderr  # none started


def test_publish_refuses_those_faults_with_the_same_lines_and_stores_nothing(tmp_path):
    text = TEXT
    for (old, new), _, _ in FAULTS.values():
        text = text.replace(old, new)
    path, db = tmp_path / "deck.yaml", tmp_path / "tutor.db"
    path.write_text(text)
    published = tutor("deck", "publish", str(path), "--guild", "3", "--db", str(db))
    validated = tutor("deck", "validate", str(path))
    assert published.returncode == 1 and validated.returncode == 1
    said = [re.sub(rf"^{re.escape(str(path))}: line (\d+), ", rf"{path}:\1: ", line)
            for line in published.stdout.splitlines()]
    assert said == validated.stdout.splitlines() and len(said) == len(FAULTS)
    assert "python-exercises" not in tutor("deck", "list", "--db", str(db)).stdout


def test_a_version_that_raises_on_every_case_is_refused_by_validate_and_publish(tmp_path):
    """Tried in a real sandbox: the chunk size as a float makes range() raise every time."""
    path = written(tmp_path, "              size = -(-len(xs) // n)\n",
                   "              size = len(xs) / n\n")
    line = line_of(path, "    behaviour:", "  - id: python-exercises/chunks")
    problem = ("python-exercises/chunks: version chunks_count_not_size raises on every case "
               "where the reference returns (`line 3: TypeError`): any answer that merely "
               "crashes the same way would be told it made this mistake; make the version's "
               "chunks return the wrong result the mistake gives")
    validated = tutor("deck", "validate", str(path), timeout=TRIAL_S)
    assert validated.returncode == 1, validated.stderr
    assert validated.stdout.splitlines() == [f"{path}:{line}: card {problem}"]
    published = tutor("deck", "publish", str(path), "--guild", "3", "--db",
                      str(tmp_path / "tutor.db"), timeout=TRIAL_S)
    assert published.returncode == 1
    assert published.stdout.splitlines() == [f"{path}: line {line}, card {problem}"]


@pytest.mark.parametrize("given", ["torch", "[[torch]]", "{torch: 1}"])
def test_given_names_of_another_type_is_told_what_the_names_are_for(tmp_path, given):
    path = written(tmp_path, "    given_names: []\n    checker: behaviour\n    mistakes: [chunks",
                   f"    given_names: {given}\n    checker: behaviour\n    mistakes: [chunks")
    result = tutor("deck", "validate", str(path), "--no-sandbox")
    line = line_of(path, f"    given_names: {given}")
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{path}:{line}: card python-exercises/chunks: cards.1.code.given_names: must be a "
        "YAML list of names, such as [torch, F], or [] (or left out) when the code needs "
        "none: the names the card's code may use without defining them (a behaviour card's "
        "are modules imported for its code; F is torch.nn.functional)"]


def test_two_exercise_decks_validate_and_publish_at_the_first_try(tmp_path):
    """The example deck and one written from docs/decks.md alone, whose cards give no
    names (pure Python); the stored one then judges a learner's answer."""
    validated = tutor("deck", "validate", str(EXAMPLE), str(OWN), timeout=TRIAL_S)
    assert validated.returncode == 0 and validated.stdout == "", validated.stderr
    notes = validated.stderr.splitlines()
    assert f"{EXAMPLE}: its 3 {TRIED}" in notes and f"{OWN}: its 3 {TRIED}" in notes
    assert "2 deck files valid." in notes
    db, answer = tmp_path / "tutor.db", tmp_path / "chunks.py"
    published = tutor("deck", "publish", str(OWN), "--guild", "5", "--db", str(db),
                      timeout=TRIAL_S)
    assert published.returncode == 0, published.stderr
    assert "Stored 'python-exercises' version 1 (3 cards) for guild 5." in published.stdout
    answer.write_text("def chunks(xs, n):\n    out = []\n    while len(xs) >= n:\n"
                      "        out.append(xs[:n])\n        xs = xs[n:]\n    return out\n")
    judged = tutor("check", "python-exercises/chunks", str(answer), "--db", str(db), "--json",
                   timeout=TRIAL_S)
    assert judged.returncode == 1, judged.stderr
    assert json.loads(judged.stdout)["mistakes"] == ["chunks_drop_tail"]


@pytest.mark.parametrize("how", ["--no-sandbox", "unreachable"])
def test_validate_says_plainly_when_the_exercises_were_not_run(how):
    # Redis on port 1: nothing listens there, so the fleet cannot be reached.
    result = tutor("deck", "validate", str(OWN), *([how] if how == "--no-sandbox" else []),
                   env={"SANDBOX_ADDRESS": "redis://127.0.0.1:1"})
    assert result.returncode == 0 and result.stdout == "", result.stderr
    why = "--no-sandbox" if how == "--no-sandbox" else "the code runner cannot be reached"
    assert f"{OWN}: behaviour exercises not run ({why}" in result.stderr
    assert result.stderr.splitlines()[-1] == ("1 deck file valid; the behaviour exercises "
                                              "of 1 were not run (above).")
    assert TRIED not in result.stderr


def test_the_example_deck_points_to_sections_that_exist():
    header = " ".join(line.lstrip("#").strip() for line in EXAMPLE.read_text().splitlines()
                      if line.startswith("#"))
    sections = re.findall(r'"([^"]+)"', header)
    headings = {h.strip() for h in re.findall(r"^#+ (.+)$", (REPO / "docs" / "decks.md")
                                              .read_text(), re.M)}
    assert sections and set(sections) <= headings, sections
    assert "docs/decks.md" in header
