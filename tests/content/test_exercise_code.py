"""A behaviour card's code read before anything runs it (content/exercise_code.py, issue 40):
through the upload's parse, on tests/fixtures/python-exercises.yaml with one edit."""

from __future__ import annotations

import pytest

from bot.engine.deck_limits import check_limits
from content.untrusted import UntrustedDeck, parse_untrusted
from tests.helpers.paths import FIXTURES

DECK = (FIXTURES / "python-exercises.yaml").read_text()
MEDIAN = DECK.split("    reference: |\n", 1)[1].split("    behaviour:\n", 1)[0]


def edited(old: str, new: str) -> str:
    assert DECK.count(old) == 1, old
    return DECK.replace(old, new)


def with_reference(code: str) -> str:
    """The deck with the median card's reference replaced by `code`."""
    return edited(MEDIAN, "".join(f"      {line}\n" for line in code.splitlines()))


def problems(text: str) -> list[str]:
    try:
        parse_untrusted(text.encode(), check_limits)
    except UntrustedDeck as exc:
        return exc.problems
    return []


def test_the_deck_passes_with_given_names_left_out_or_empty():
    deck, _ = parse_untrusted(DECK.encode(), check_limits)
    assert [card.given_names for card in deck.cards] == [[], [], []]


@pytest.mark.parametrize("code", [
    "if True:\n    def median(xs):\n        return sorted(xs)[len(xs) // 2]",
    "def _middle(xs):\n    return sorted(xs)[len(xs) // 2]\nmedian = _middle",
    "from statistics import median",
    "class median(float):\n    def __new__(cls, xs):\n        return float(sorted(xs)[0])",
], ids=["in-a-branch", "assigned", "imported", "a-class"])
def test_an_entry_defined_any_top_level_way_is_accepted(code):
    assert problems(with_reference(code)) == []


def test_an_entry_defined_only_inside_a_function_is_refused():
    text = with_reference("def outer():\n    def median(xs):\n        return xs[0]")
    line = text.splitlines().index("    reference: |") + 1
    assert problems(text) == [
        f"line {line}, card python-exercises/median: the reference does not define median, "
        "the card's entry: define it at the top level (`def median(...):` or `class median:`), "
        "as the learner's code must"]


def test_code_that_parses_but_does_not_compile_is_refused():
    # `return` outside a function: ast.parse takes it, only compiling says it.
    text = edited("        median_even_upper: |\n          def median(xs):\n"
                  "              return sorted(xs)[len(xs) // 2]\n",
                  "        median_even_upper: |\n          def median(xs):\n"
                  "              pass\n          return sorted(xs)[len(xs) // 2]\n")
    line = text.splitlines().index("        median_even_upper: |") + 1
    assert problems(text) == [
        f"line {line}, card python-exercises/median: version median_even_upper does not "
        "compile (its line 3 `return sorted(xs)[len(xs) // 2]`: SyntaxError: 'return' outside "
        "function): fix the code"]
