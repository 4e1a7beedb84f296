"""The blind solver's framing tricks (topic_chip, odd_one_out, no_absolutes) and the lint
check they led to (one chip answering every value blank), on small in-memory decks.

The bundled decks are judged against every trick in tests/content/test_deck_giveaways.py.
"""

from __future__ import annotations

import pytest

from content.giveaways import check_giveaways
from tests.helpers import blind_solver
from tests.helpers.giveaway_decks import deck, fill_in, mcq, messages
from tests.helpers.odd_one_out import absolutes, alone_in, oddness, stem, stems


def scores(d, trick: str) -> list[float]:
    return list(blind_solver.solve(d)[trick].scores.values())


def test_every_trick_is_run():
    assert {"topic_chip", "odd_one_out", "no_absolutes"} <= set(blind_solver.TRICKS)
    assert set(blind_solver.PICKERS) == set(blind_solver.TRICKS)


# --- stems ---------------------------------------------------------------------------------

def test_stems_join_the_forms_of_a_word():
    assert stem("accumulate") == stem("accumulated") == stem("accumulation") == "accumul"
    assert stem("gradients") == stem("gradient") and stem("batches") == stem("batch")
    assert stem("step") == stem("steps") and stem("grad") == "grad"  # short words stay
    assert stems("accumulation_steps") == {"accumulation_step", "accumul", "step"}


# --- topic_chip ----------------------------------------------------------------------------

def _named_after_the_deck(n: int) -> dict:
    return fill_in("if (i + 1) % [[window]] == 0:\n    optimizer.step()",
                   ["batch_size", "num_epochs", "demo_steps", "learning_rate"],
                   {"window": "demo_steps"}, n=n)


def test_topic_chip_picks_the_chip_named_after_the_deck():
    # The demo deck is titled "Demo": `demo_steps` is the chip named after it.
    assert scores(deck(_named_after_the_deck(1)), "topic_chip") == [1.0]


def test_topic_chip_reads_the_cards_topics_and_word_forms():
    card = mcq("Divide each one before backward()",
               ["Scale the learning rate up", "Call step() twice"],
               prompt="How is the loss handled?")
    card["topics"] = ["loss-scaling"]  # "Scale" meets "scaling": a wrong option
    assert scores(deck(card), "topic_chip") == [0.0]


def test_topic_chip_without_a_named_choice_is_chance():
    card = fill_in("if (i + 1) % [[window]] == 0:\n    optimizer.step()", ["4", "16", "64"],
                   {"window": "4"})
    assert scores(deck(card), "topic_chip") == [pytest.approx(1 / 3)]


# --- odd_one_out ---------------------------------------------------------------------------

def test_alone_in_needs_three_choices_and_agreeing_others():
    assert alone_in([True, False, False, False]) == [True, False, False, False]
    assert alone_in(["a", "b", "b", "c"]) == [False] * 4  # the others disagree
    assert alone_in([True, False]) == [False, False]  # two: both would be "odd"


HEDGED = mcq("Different, since each micro-batch is normalised on its own",
             ["Identical, since the summed gradients match one batch",
              "Identical, since the statistics cover the window",
              "Different, but only because running statistics move per step"])


def test_odd_one_out_spots_a_hedge():
    # "but only because" stands alone: the trick picks that option (here a wrong one).
    texts = [o["text"] for o in HEDGED["options"]]
    assert max(range(4), key=oddness(texts).__getitem__) == 3
    assert scores(deck(HEDGED), "odd_one_out") == [0.0]


def test_odd_one_out_spots_the_only_negation_and_the_only_mechanism():
    negated = mcq("No faster, as the same work runs in smaller pieces",
                  ["Faster, as the optimizer steps less often",
                   "Faster, as small batches run quicker", "Faster, as backward runs less"])
    mechanism = mcq("Skips the all-reduce; the 4th backward() syncs the sum",
                    ["Stops those micro-batches from adding gradients",
                     "Lets the replicas drift apart", "Fixes the averaging of the sums"], n=2)
    assert scores(deck(negated, mechanism), "odd_one_out") == [1.0, 1.0]


def test_odd_one_out_spots_the_option_sharing_no_words():
    card = mcq("To fit a large batch in memory",
               ["To raise the learning rate of the model", "To lower the learning rate",
                "To change the learning rate schedule"])
    assert scores(deck(card), "odd_one_out") == [1.0]


def test_odd_one_out_on_parallel_options_is_no_better_than_chance():
    card = mcq("Different: its statistics come from 8 samples at a time",
               ["Identical: the summed gradients equal one batch of 64",
                "Identical: it normalises with the statistics of 64 samples",
                "Different: it updates its running statistics per 64 samples"])
    assert scores(deck(card), "odd_one_out") == [0.0]


def test_odd_one_out_spots_the_one_compound_chip():
    card = fill_in("optimizer.[[m]]()", ["step", "zero_grad", "backward", "eval"],
                   {"m": "zero_grad"})
    fair = fill_in("optimizer.[[m]]()", ["step", "zero_grad", "backward", "clip_grad_norm_"],
                   {"m": "zero_grad"}, n=2)
    assert scores(deck(card, fair), "odd_one_out") == [1.0, 0.0]


# --- no_absolutes --------------------------------------------------------------------------

def test_absolutes_are_counted_in_any_case():
    assert absolutes("Only ONCE, and never again, for all of them") == 3
    assert absolutes("Once per window") == 0


def test_no_absolutes_avoids_sweeping_options():
    card = mcq("It steps once per window", ["It only steps at the end",
                                              "It never steps", "It always steps"])
    fair = mcq("It always steps per window", ["It only steps at the end",
                                               "It never steps", "It steps at random"], n=2)
    assert scores(deck(card, fair), "no_absolutes") == [1.0, 0.0]


# --- lint: one chip answers every value blank ----------------------------------------------

def _value_card(n: int, answer: str = "accumulation_steps") -> dict:
    return fill_in("loss = loss / [[divisor]]\nloss.[[method]]()",
                   ["accumulation_steps", "batch_size", "4", "backward", "step"],
                   {"divisor": answer, "method": "backward"},
                   hint="Divide by how many micro-batches make one update.", n=n)


def test_one_chip_answering_every_value_blank_is_flagged_on_each():
    problems = messages(deck(*(_value_card(n) for n in range(3))))
    assert [path for path, _ in problems] == [("cards", n, "blanks", 0) for n in range(3)]
    assert all("'accumulation_steps' answers every value blank of the deck (3 of 3)" in m
               for _, m in problems)


def test_value_blanks_with_another_answer_or_too_few_are_fair():
    assert messages(deck(_value_card(0), _value_card(1))) == []  # two: a loop's own pair
    mixed = deck(_value_card(0), _value_card(1), _value_card(2, answer="4"))
    assert messages(mixed) == []


def test_method_blanks_do_not_count_as_value_blanks():
    # The method blank of every card is answered by `backward`: not a value, not flagged.
    cards = [_value_card(0), _value_card(1), _value_card(2, answer="4")]
    assert not [m for _, m in check_giveaways(deck(*cards)) if "backward" in m]
