"""Answers given away: the give-away lint (content.giveaways) and the blind solver.

The unit tests use small in-memory decks, one that gives an answer away and one fair card
per check. The last tests judge every bundled deck: no give-away problem, and no blind
test-taking trick beating chance by more than 15 points. One file (just over 400 lines):
each check's unfair card sits beside its fair one.
"""

from __future__ import annotations

import copy

import pytest

from content.giveaway_words import (
    ALLOW_PRAGMA,
    METHOD_NAMES,
    OPTIMIZER_METHODS,
    TENSOR_METHODS,
    allows_giveaways,
    chip_kind,
    slot_kind,
    words,
    words_with_parts,
)
from content.giveaways import check_giveaways
from content.lint import check_deck
from content.loader import DeckError, deck_files, parse_deck
from content.schema import Deck
from tests.helpers import blind_solver
from tests.helpers.giveaway_decks import deck, fill_in, mcq, messages

MAX_MARGIN = 0.15  # a trick may beat chance by at most 15 percentage points


# A fair card of each kind: every check must leave them alone.
FAIR_FILL = fill_in("optimizer.[[method]]()", ["zero_grad", "step", "backward", "eval"],
                    {"method": "zero_grad"},
                    prompt="Complete the code to clear the old gradients.",
                    hint="Which optimizer call gives the next pass a clean slate?",
                    takeaway="zero_grad() clears, backward() computes, step() updates.")
FAIR_VALUES = fill_in("loss = loss / [[divisor]]\nloss.[[method]]()",
                      ["accumulation_steps", "batch_size", "backward", "step"],
                      {"divisor": "accumulation_steps", "method": "backward"},
                      hint="Divide by how many micro-batches make one update.", n=2)
FAIR_MCQ = mcq("To fit a large batch in memory",
               ["To add parameters to the model", "To raise the learning rate"],
               prompt="Why accumulate gradients?",
               hint="Think about what limits a batch on one GPU.",
               takeaway="Big batch, small pieces.")


def test_fair_cards_pass_every_check():
    assert messages(deck(FAIR_FILL, FAIR_VALUES, FAIR_MCQ)) == []


# --- words ----------------------------------------------------------------------------------

def test_words_are_lowercase_tokens_without_stop_words():
    assert words("Call loss.backward() on EVERY micro-batch, i = 0") == {
        "call", "loss", "backward", "micro", "batch", "0"}
    assert words("zero_grad() and accumulation_steps") == {"zero_grad", "accumulation_steps"}
    assert words_with_parts("zero_grad") == {"zero_grad", "zero", "grad"}


# --- (a) the correct option restates the prompt or takeaway ----------------------------------

def test_correct_option_restating_the_takeaway_is_flagged():
    card = mcq("backward() on every micro-batch, step() and zero_grad() once per window",
               ["step() before backward()", "zero_grad() before every backward()"],
               takeaway="backward() every micro-batch; step() then zero_grad() once per window.")
    [(path, message)] = messages(deck(card))
    assert path == ("cards", 0, "options", 0, "text")
    assert "restates the takeaway" in message and "'window'" in message


def test_correct_option_restating_the_prompt_is_flagged():
    card = mcq("The scaled loss of each batch, printed every batch",
               ["A runtime error", "Nothing at all"],
               prompt="Which scaled loss does the loop print for each batch?")
    [(path, message)] = messages(deck(card))
    assert path == ("cards", 0, "options", 0, "text") and "restates the prompt" in message


def test_an_option_sharing_a_topic_word_or_two_is_fair():
    card = mcq("Divide the loss by 8 before backward() and keep the learning rate",
               ["Multiply the learning rate by 8", "Change nothing at all"],
               takeaway="Scale the loss by 1 / accumulation_steps; leave the learning rate.",
               prompt="How should the loss be handled?")
    # 'loss', 'learning', 'rate' are in the takeaway: 3 of 7 words, not a restatement.
    assert messages(deck(card)) == []


# --- (b) the key is the longest option too often ---------------------------------------------

LONG, SHORT = "A long and detailed correct answer here", "Short"


def test_key_longest_in_most_cards_is_flagged_on_each():
    cards = [mcq(LONG, [SHORT, "Brief"], n=i) for i in range(3)]
    cards.append(mcq(SHORT, [LONG, "Brief"], n=9))
    problems = messages(deck(*cards))
    assert [path for path, _ in problems] == [
        ("cards", i, "options", 0, "text") for i in range(3)]
    assert all("3 of the deck's 4 multiple-choice cards" in message for _, message in problems)


def test_key_longest_in_half_the_cards_is_chance():
    cards = [mcq(LONG, [SHORT, "Brief"], n=i) for i in range(2)]
    cards += [mcq(SHORT, [LONG, "Brief"], n=i) for i in range(2, 4)]
    assert messages(deck(*cards)) == []


def test_too_few_cards_for_the_longest_check():
    # Two of two is common by chance; two-option cards do not count.
    cards = [mcq(LONG, [SHORT, "Brief"], n=i) for i in range(2)]
    cards += [mcq(LONG, [SHORT], n=i) for i in range(2, 6)]
    assert messages(deck(*cards)) == []


def test_a_tie_for_longest_is_not_the_key_alone():
    cards = [mcq("Equal length one", ["Equal length two", "Short"], n=i) for i in range(3)]
    assert messages(deck(*cards)) == []


# --- (c) the hint uses words only the key has ------------------------------------------------

def test_choice_hint_sharing_the_keys_own_words_is_flagged():
    card = mcq("It steps at i = 0; the condition should test i + 1",
               ["The loss needs scaling", "zero_grad() belongs before backward()"],
               hint="Evaluate the condition for i = 0, 1, 2.")
    [(path, message)] = messages(deck(card))
    assert path == ("cards", 0, "hint")
    assert "'0', '1', 'condition'" in message and "only the correct option" in message


def test_fill_in_hint_sharing_a_multi_word_chip_is_flagged():
    card = fill_in("[[call]]", ["loss.backward()", "optimizer.step()"], {"call": "loss.backward()"},
                   hint="Which call of the loss tensor fills .grad?")
    problems = messages(deck(card))
    assert any(path == ("cards", 0, "hint") and "'loss'" in message
               and "chip 'loss.backward()'" in message for path, message in problems)


def test_hint_words_shared_with_a_wrong_choice_do_not_count():
    card = mcq("Clear the gradients after the step",
               ["Clear the gradients before every backward", "Never clear"],
               hint="When should gradients be cleared?")
    assert messages(deck(card)) == []


def test_hint_sharing_a_plural_of_a_chip_is_fair():
    # "steps" is not the chip "step" (words match exactly, as in content.lint).
    card = fill_in("optimizer.[[method]]()", ["step", "zero_grad"], {"method": "step"},
                   hint="How many steps until the update?")
    assert messages(deck(card)) == []


# --- (d) only one chip fits the slot's type --------------------------------------------------

def test_slot_kinds():
    assert slot_kind("loss.[[m]]()", "m") == "method"
    assert slot_kind("loss = loss / [[v]]", "v") == "value"
    assert slot_kind("if (i + 1) % [[v]] == 0:", "v") == "value"
    assert slot_kind("f(x, [[v]])", "v") == "value"
    assert slot_kind("x = [[v]]", "v") == "value"
    assert slot_kind("return [[v]]", "v") == "value"
    assert slot_kind("[[f]](x)", "f") is None  # a bare call: a function or a callable value
    assert slot_kind("param.[[a]]", "a") is None  # an attribute
    assert slot_kind("optimizer.[[a]]([[b]])", "b") == "value"


def test_chip_kinds():
    assert chip_kind("backward") == chip_kind("zero_grad") == chip_kind("eval") == "method"
    assert chip_kind("accumulation_steps") == chip_kind("batch_size") == "value"
    assert chip_kind("4") == chip_kind("0.5") == "value"
    assert chip_kind("loss.backward()") is None


def test_only_one_value_chip_is_flagged():
    card = fill_in("loss = loss / [[divisor]]\nloss.[[method]]()",
                   ["accumulation_steps", "backward", "step"],
                   {"divisor": "accumulation_steps", "method": "backward"})
    [(path, message)] = messages(deck(card))
    assert path == ("cards", 0, "blanks", 0)
    assert "needs a value and only the chip 'accumulation_steps'" in message
    assert "'backward', 'step' are method names" in message


def test_only_one_method_chip_is_flagged():
    card = fill_in("loss.[[call]]()", ["backward", "accumulation_steps", "batch_size"],
                   {"call": "backward"})
    [(path, message)] = messages(deck(card))
    assert path == ("cards", 0, "blanks", 0) and "needs a method" in message


def test_unsure_slots_and_expression_chips_are_not_judged():
    bare = fill_in("[[f]](outputs, labels)", ["criterion", "backward"], {"f": "criterion"})
    exprs = fill_in("loss = [[v]]", ["loss / accumulation_steps", "backward"],
                    {"v": "loss / accumulation_steps"}, n=2)
    assert messages(deck(bare, exprs)) == []


def test_known_method_names_exist_in_torch():
    torch = pytest.importorskip("torch")
    for name in TENSOR_METHODS:
        assert hasattr(torch.Tensor, name), name
    for name in OPTIMIZER_METHODS:
        assert hasattr(torch.optim.Optimizer, name), name
    assert {"backward", "step", "zero_grad", "eval", "detach"} <= METHOD_NAMES


# --- the loader ---------------------------------------------------------------------------------

GIVEAWAY_YAML = """\
id: demo
title: Demo
description: Demo deck.
version: 1
mistakes:
  - {id: oops, title: Oops, explanation: A mistake.}
cards:
  - id: demo/scale
    type: fill_in
    rev: 1
    difficulty: easy
    topics: [t]
    prompt: Scale the loss.
    code: |
      loss = loss / [[divisor]]
    chips:
      - {id: accumulation_steps, text: accumulation_steps}
      - {id: backward, text: backward}
    blanks:
      - id: divisor
        answer: accumulation_steps
        wrong:
          backward: {mistake: oops, says: There is no variable called backward.}
    hint: How many micro-batches make one update?
    explanation: Divide by the window size.
    takeaway: Scale the loss.
"""


def test_the_loader_reports_giveaways_with_their_line():
    with pytest.raises(DeckError) as info:
        parse_deck(GIVEAWAY_YAML, "demo.yaml")
    [problem] = info.value.problems
    line = GIVEAWAY_YAML.splitlines().index("      - id: divisor") + 1
    assert (problem.file, problem.line) == ("demo.yaml", line)
    assert "only the chip 'accumulation_steps'" in problem.message


def test_the_pragma_skips_the_giveaway_checks_only():
    text = ALLOW_PRAGMA + "\n" + GIVEAWAY_YAML
    assert allows_giveaways(text) and not allows_giveaways(GIVEAWAY_YAML)
    assert parse_deck(text).id == "demo"
    assert parse_deck(GIVEAWAY_YAML, giveaways=False).id == "demo"
    with pytest.raises(DeckError):
        parse_deck(text, giveaways=True)
    with pytest.raises(DeckError, match="unknown mistake id"):
        parse_deck(text.replace("mistake: oops", "mistake: nope"))


# --- the blind solver ---------------------------------------------------------------------------

def test_solver_scores_ties_as_expectation():
    longest = mcq(LONG, [SHORT, "Brief"], n=1)  # longest: 1
    tied = mcq("Same size A", ["Same size B", "Same size C"], n=2)  # longest: 1/3
    misled = mcq(SHORT, [LONG, "Brief", "Tiny"], n=3)  # longest: 0
    results = blind_solver.solve(deck(longest, tied, misled))
    longest_trick = results["longest"]
    assert longest_trick.accuracy == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert longest_trick.chance == pytest.approx((1 / 3 + 1 / 3 + 1 / 4) / 3)
    assert longest_trick.right() == [("demo/mcq-1", 1.0), ("demo/mcq-2", pytest.approx(1 / 3))]


def test_solver_echo_and_slot_type_tricks():
    echo = mcq("Average the gradients of the window", ["Train faster", "Save memory"],
               prompt="Why divide the loss?", hint="Think about gradients summed over a window.")
    blanks = fill_in("loss = loss / [[divisor]]\nloss.[[method]]()",
                     ["accumulation_steps", "batch_size", "backward", "step"],
                     {"divisor": "accumulation_steps", "method": "backward"},
                     prompt="Scale the loss for gradient accumulation.", hint="Then backpropagate.")
    results = blind_solver.solve(deck(echo, blanks))
    assert results["echo"].scores == {
        "demo/mcq-1": 1.0, "demo/fill-1 [[divisor]]": 1.0, "demo/fill-1 [[method]]": 0.0}
    assert results["echo"].accuracy == pytest.approx(2 / 3)
    # Type first (two values, two methods), then echo: "accumulation" picks the divisor;
    # nothing in prompt or hint names a method, so backward and step tie.
    assert results["slot_type"].scores == {
        "demo/mcq-1": 1.0, "demo/fill-1 [[divisor]]": 1.0, "demo/fill-1 [[method]]": 0.5}
    assert results["slot_type"].chance == pytest.approx((1 / 3 + 1 / 4 + 1 / 4) / 3)


def test_solver_on_fair_cards_does_not_beat_chance():
    # The key is neither the longest choice nor the shortest, no choice echoes the prompt or
    # hint, and none stands apart in form (each starts with an article) or names the deck.
    fair = deck(
        fill_in("optimizer.[[method]]()", ["step", "zero_grad", "backward", "add"],
                {"method": "step"}, prompt="Complete the update.",
                hint="Which optimizer call applies the stored gradients?"),
        mcq("A memory limit", ["A new model", "A higher learning rate"],
            prompt="What limits the batch size on one GPU?", hint="Think hardware."),
    )
    results = blind_solver.solve(fair)
    assert all(result.margin <= 0 for result in results.values()), blind_solver.report(fair)


# --- the bundled decks -------------------------------------------------------------------------

BUNDLED = deck_files()


def _structural(path) -> Deck:
    """The deck with its structural checks only, so give-aways are judged separately."""
    return parse_deck(path.read_text(encoding="utf-8"), str(path), giveaways=False)


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_deck_does_not_opt_out_of_the_giveaway_checks(path):
    assert not allows_giveaways(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_deck_gives_no_answer_away(path):
    d = _structural(path)
    problems = check_giveaways(d)
    listing = "\n".join(f"{'.'.join(map(str, p))}: {m}" for p, m in problems)
    assert not problems, f"{path} gives answers away:\n{listing}"


# A trick judged on the items where it tells choices apart needs this many of them to be
# judged there (fewer: the per-card checks of content.giveaways judge it).
APPLIED_MIN_ITEMS = 8


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_blind_solver_stays_near_chance_on_both_sides(path):
    """Two-sided: a trick far below chance gives answers away as well, since ruling out
    what it picks ("the key is never the longest") beats chance."""
    d = _structural(path)
    results = blind_solver.solve(d)
    print(blind_solver.report(d, results))
    off = [r.trick for r in results.values() if abs(r.margin) > MAX_MARGIN]
    off += [f"{r.trick} where it applies" for r in results.values()
            if len(r.applied) >= APPLIED_MIN_ITEMS and abs(r.applied_margin) > MAX_MARGIN]
    assert not off, (
        f"tricks more than {MAX_MARGIN:.0%} from chance ({', '.join(off)}):\n"
        + blind_solver.report(d, results))


def test_solver_leaves_the_deck_untouched():
    d = _structural(BUNDLED[0])
    before = copy.deepcopy(d.model_dump())
    blind_solver.solve(d)
    assert d.model_dump() == before


def test_a_hint_spelling_out_the_key_is_reported_once():
    # content.lint already says "hint gives away the answer"; the word check stays silent.
    card = fill_in("optimizer.[[method]]()", ["zero_grad", "step"], {"method": "zero_grad"},
                   hint="Call optimizer.zero_grad() first.")
    problems = check_deck(deck(card))
    assert [message for _, message in problems] == ["hint gives away the answer 'zero_grad'"]
