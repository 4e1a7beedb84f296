"""The give-away checks and blind-solver tricks of issue 40 point 9, on small in-memory
decks: key length judged on both sides, the chip named after the topic (whole words and
stems), the key with the fewest line edits among code options, the only number the prompt
does not state, the only variable defined and never used. The bundled decks are judged
against all of them in tests/content/test_deck_giveaways.py."""

from __future__ import annotations

import pytest

from content.giveaway_tricks import key_length_rank, line_edits, unused_names
from content.schema import FillInCard
from tests.helpers import blind_solver
from tests.helpers.giveaway_decks import deck, fill_in, mcq, messages, wrong


def scores(d, trick: str) -> list[float]:
    return list(blind_solver.solve(d)[trick].scores.values())


def test_every_new_trick_is_run():
    assert {"shortest", "topic_word", "fewest_edits", "fresh_number", "unused_name"} <= set(
        blind_solver.TRICKS)


# --- key length, both sides ----------------------------------------------------------------

SHORT, MID, LONG, LONGER = "Tiny", "Middling one", "Quite a bit longer", "The longest of them all"


def test_key_shortest_in_most_cards_is_flagged_on_each():
    cards = [mcq(SHORT, [MID, LONG, LONGER], n=i) for i in range(4)]
    cards.append(mcq(LONG, [SHORT, MID, LONGER], n=9))
    problems = [(p, m) for p, m in messages(deck(*cards)) if "shortest one here" in m]
    assert [p for p, _ in problems] == [("cards", i, "options", 0, "text") for i in range(4)]


def test_keys_never_the_longest_are_flagged_by_their_mean_rank():
    # 5 of 12 keys strictly shortest (not more than half), 7 second shortest, none longest:
    # mean rank 0.19, more than 1.96 standard errors below the middle.
    cards = [mcq(SHORT, [MID, LONG, LONGER], n=i) for i in range(5)]
    cards += [mcq(MID, [SHORT, LONG, LONGER], n=i) for i in range(5, 12)]
    problems = messages(deck(*cards))
    assert problems and all("lean to the short end" in m for _, m in problems)
    assert len(problems) == 12
    assert not any("shortest one here" in m for _, m in problems)


def test_keys_spread_over_the_length_order_are_fair():
    keys = [SHORT, MID, LONG, LONGER] * 3
    cards = [mcq(key, [t for t in (SHORT, MID, LONG, LONGER) if t != key], n=i)
             for i, key in enumerate(keys)]
    assert messages(deck(*cards)) == []


def test_key_length_rank_counts_ties_at_their_middle():
    card = deck(mcq("Same", ["Sam", "Same", "Longer"])).cards[0]
    assert key_length_rank(card) == pytest.approx((1 + 0.5) / 3)


def test_solver_shortest_picks_the_shortest():
    assert scores(deck(mcq(SHORT, [MID, LONG])), "shortest") == [1.0]
    assert scores(deck(mcq(MID, [SHORT, LONG])), "shortest") == [0.0]


# --- the chip named after the topic -----------------------------------------------------------

def topic(d) -> list[tuple[tuple, str]]:
    """The topic-word problems only (one chip answering every value blank is another)."""
    return [(p, m) for p, m in messages(d) if "deck's title" in m]


def _window(n: int, answer: str, chips: list[str]) -> dict:
    return fill_in("if (i + 1) % [[window]] == 0:\n    optimizer.step()", chips,
                   {"window": answer}, n=n)


def test_the_chip_with_the_title_word_answering_most_blanks_is_flagged():
    # The demo deck is titled "Demo".
    cards = [_window(n, "demo_steps", ["demo_steps", "batch_size", "num_epochs"])
             for n in range(3)]
    problems = topic(deck(*cards))
    assert [p for p, _ in problems] == [("cards", n, "blanks", 0) for n in range(3)]
    assert all("a word of the deck's title" in m and "100%" in m for _, m in problems)


def test_a_second_chip_with_the_title_word_makes_it_fair():
    cards = [_window(n, "demo_steps", ["demo_steps", "demo_samples", "num_epochs"])
             for n in range(3)]
    assert topic(deck(*cards)) == []
    # The solver's whole-word trick ties the two: half of each blank.
    assert scores(deck(*cards), "topic_word") == [0.5] * 3


def test_stems_catch_a_chip_named_after_a_form_of_the_title_word():
    cards = [_window(n, "demos_count", ["demos_count", "batch_size", "num_epochs"])
             for n in range(3)]
    problems = topic(deck(*cards))
    assert len(problems) == 3 and all("a stem of the deck's title" in m for _, m in problems)


def test_a_method_chip_with_the_title_word_does_not_count_in_a_value_slot():
    # `demo_steps` is the only value chip named after the topic; the method chips can be
    # ruled out by the slot, so they do not dilute it.
    cards = [_window(n, "demo_steps", ["demo_steps", "batch_size", "step"]) for n in range(3)]
    assert len(topic(deck(*cards))) == 3


# --- the key with the fewest line edits -------------------------------------------------------

BASE = """for i, (inputs, labels) in enumerate(dataloader):
    loss = criterion(model(inputs), labels) / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def _code_card(key: str, others: list[str]) -> dict:
    card = mcq("This loop", ["This loop"] * len(others))
    for option, code in zip(card["options"], [key, *others], strict=True):
        option["code"] = code
    return card


def _moved(code: str, line: str, after: str) -> str:
    lines = code.splitlines()
    lines.remove(line)
    lines.insert(lines.index(after) + 1, line)
    return "\n".join(lines) + "\n"


ZERO = "        optimizer.zero_grad()"
STEP = "        optimizer.step()"
BACKWARD = "    loss.backward()"
LOSS = "    loss = criterion(model(inputs), labels) / accumulation_steps"


def test_line_edits_count_a_moved_line_as_two():
    assert line_edits(BASE, BASE) == 0
    assert line_edits(BASE, _moved(BASE, BACKWARD, STEP)) == 2


def test_key_at_the_centre_of_one_change_each_is_flagged():
    others = [_moved(BASE, BACKWARD, ZERO), _moved(BASE, ZERO, BACKWARD),
              BASE.replace(STEP, "    optimizer.step()")]
    problems = messages(deck(_code_card(BASE, others)))
    assert [p for p, _ in problems] == [("cards", 0, "options", 0, "code")]
    assert "fewest line edits" in problems[0][1]
    assert scores(deck(_code_card(BASE, others)), "fewest_edits") == [1.0]


def test_wrong_loops_misplacing_the_same_call_tie_with_the_key():
    others = [_moved(BASE, ZERO, LOSS), _moved(BASE, ZERO, BACKWARD),
              BASE.replace(ZERO + "\n", "")]
    assert messages(deck(_code_card(BASE, others))) == []
    assert scores(deck(_code_card(BASE, others)), "fewest_edits") == [0.0]


# --- the only number the prompt does not state ------------------------------------------------

def _numbers(chips: list[str]) -> dict:
    return fill_in("if (batch_idx + 1) % [[window]] == 0:\n    optimizer.step()", chips,
                   {"window": "4"}, prompt="Average 64 samples in micro-batches of 16.")


def test_the_only_new_number_is_flagged():
    problems = messages(deck(_numbers(["64", "4", "16"])))
    assert [p for p, _ in problems] == [("cards", 0, "blanks", 0)]
    assert "only number chip the prompt does not state" in problems[0][1]
    assert scores(deck(_numbers(["64", "4", "16"])), "fresh_number") == [1.0]


def test_a_second_computed_number_makes_it_fair():
    assert messages(deck(_numbers(["64", "4", "16", "1024"]))) == []
    assert scores(deck(_numbers(["64", "4", "16", "1024"])), "fresh_number") == [0.5]


# --- the only variable defined and never used ------------------------------------------------

def _unused(code: str, chips: list[str], answer: str) -> dict:
    return fill_in(code, chips, {"d": answer})


DEFINED = "tokens = 10\nsamples = 4\nprint(samples)\n(loss / [[d]]).backward()\n"


def test_the_only_unused_variable_is_flagged():
    card = _unused(DEFINED, ["tokens", "samples", "batch_size"], "tokens")
    problems = messages(deck(card))
    assert [p for p, _ in problems] == [("cards", 0, "blanks", 0)]
    assert "defines and never uses" in problems[0][1]
    assert scores(deck(card), "unused_name") == [1.0]


def test_an_unused_variable_used_elsewhere_or_a_running_sum_is_fair():
    used = DEFINED.replace("print(samples)", "print(samples, tokens)")
    assert messages(deck(_unused(used, ["tokens", "samples", "batch_size"], "tokens"))) == []
    running = "total = 0.0\nfor x in xs:\n    total += x\nlog([[d]])\n"
    card = FillInCard.model_validate(_unused(running, ["total", "x", "xs"], "total"))
    assert unused_names(card) == [False, False, False]


def test_wrong_helper_is_a_registered_mistake():
    assert wrong()["mistake"] == "oops"
