"""Lint: answers a card gives away to a learner who knows nothing about the topic.

Four checks, each reported like the rest of `content.lint` as (YAML path, message):

a. `restates`: the correct option's text restates the card's prompt or takeaway.
b. `longest`: across the deck, the correct option is the strictly longest option of too
   many multiple-choice cards (test-takers learn "pick the longest").
c. `hint`: the hint contains words that only the key has (none of its wrong choices).
d. `slot type`: only one chip of a fill-in card can fill a blank at all: the code asks
   for a method (`loss.[[m]]()`) or a value (`loss / [[v]]`) and just one chip is one.
e. `one value`: across the deck, one chip text answers every value blank (3 or more): a
   learner who always picks `accumulation_steps` is never wrong.
f. `key length`: two-sided. Across the deck the keys of the text multiple-choice cards
   are neither mostly the shortest option (the mirror of b) nor, on average, placed
   towards either end of the length order (their mean length rank is within 1.96
   standard errors of the middle): "never pick the longest" is a trick too.
g. `topic word`: across the deck, the chip named after the deck's title (a word of the
   title as a whole word of the chip, or, in a second pass, as a word stem) answers more
   than half of the blanks where such a chip stands among others of the slot's kind.
h. `fewest edits`: in a card whose options are code, the key is the one option with the
   fewest line edits to all the others (each wrong loop is the key with one call moved).
i. `fresh number`: the key is the only number chip not copied from the card's prompt or
   code (the others are the prompt's numbers, the answer is computed from them).
j. `unused name`: the key is the only chip naming a variable the snippet defines and
   never uses (apart from the blank).

The words a card is read by are `content.giveaway_words`; b and f-j, the tricks of a
test-taker who knows no PyTorch, are `content.giveaway_tricks`. Words are compared exactly
(lower-cased, no stemming), so "steps" is not "step", in keeping with the hint rule of
`content.lint`; only g also compares stems. Everything here is deterministic and needs no
torch: the method names a chip may be are listed in `content.giveaway_words`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from content.giveaway_tricks import card_problems, deck_problems
from content.giveaway_words import (
    ALLOW_PRAGMA,
    Path,
    Problem,
    allows_giveaways,
    chip_kind,
    fitting_chips,
    slot_kind,
    spells_out,
    words,
)
from content.schema import ChoiceCard, Deck, FillInCard

__all__ = ["ALLOW_PRAGMA", "allows_giveaways", "check_giveaways", "spells_out"]

# --- the checks -------------------------------------------------------------------------------

# (a) The correct option restates the prompt or takeaway when at least 60% of its
# distinctive words, and at least 3 of them, appear there. Three words keep short keys
# ("To save memory") from tripping on one topical word; 60% means most of what the option
# says is borrowed. Ordinary keys of this kind share one or two topic words (loss, batch).
RESTATE_SHARE = 0.6
RESTATE_MIN_WORDS = 3
# (b) Chance puts the key strictly longest in at most 1 of 3 cards with 3+ options. More
# than half of them, and at least 3 cards (below that a streak is common: two 3-option
# cards are both "longest" once in 9 decks), is more than chance explains.
LONGEST_MIN_OPTIONS = 3
LONGEST_MIN_CARDS = 3
# (c) One shared word in a long option can be the topic ("batch" in a batching deck); two
# distinctive words of the key, or half of a short key (a chip, "save memory"), point at it.
HINT_MIN_WORDS = 2
# (e) Two value blanks with the same answer are common (a divisor and a window of one loop);
# from three on, one chip answering all of them is a rule a learner can learn instead.
ONE_VALUE_MIN_BLANKS = 3


def check_giveaways(deck: Deck) -> list[Problem]:
    return list(_giveaway_problems(deck))


def _giveaway_problems(deck: Deck) -> Iterator[Problem]:
    for index, card in enumerate(deck.cards):
        base: Path = ("cards", index)
        if isinstance(card, ChoiceCard):
            yield from _restates(card, base)
            yield from _choice_hint(card, base)
        elif isinstance(card, FillInCard):
            yield from _fill_in_hint(card, base)
            yield from _slot_types(card, base)
        if isinstance(card, ChoiceCard | FillInCard):
            yield from card_problems(card, base)
    yield from _one_value_answer(deck)
    yield from deck_problems(deck)


def _listed(items: Iterable[str]) -> str:
    return ", ".join(f"'{item}'" for item in sorted(items))


def _correct(card: ChoiceCard) -> list[tuple[int, Any]]:
    return [(i, option) for i, option in enumerate(card.options) if option.correct]


def _restates(card: ChoiceCard, base: Path) -> Iterator[Problem]:
    for index, option in _correct(card):
        mine = words(option.text)
        for field in ("prompt", "takeaway"):
            shared = mine & words(getattr(card, field))
            if len(shared) >= RESTATE_MIN_WORDS and len(shared) >= RESTATE_SHARE * len(mine):
                yield (*base, "options", index, "text"), (
                    f"the correct option restates the {field}: {len(shared)} of its "
                    f"{len(mine)} distinctive words ({_listed(shared)}) are in the {field}; "
                    "word it in its own terms")


def _key_words_in_hint(key: str, others: set[str], hint: str) -> set[str] | None:
    """The key's own words found in the hint, when they are enough to point at the key
    (and the hint does not spell out the whole key, which `content.lint` reports)."""
    if spells_out(hint, key):
        return None
    own = words(key) - others
    shared = own & words(hint)
    if shared and len(shared) >= min(HINT_MIN_WORDS, math.ceil(len(own) / 2)):
        return shared
    return None


def _choice_hint(card: ChoiceCard, base: Path) -> Iterator[Problem]:
    for _, option in _correct(card):
        others = set().union(*(words(o.text) for o in card.options if not o.correct))
        shared = _key_words_in_hint(option.text, others, card.hint)
        if shared:
            yield (*base, "hint"), (
                f"hint points at the correct option: it uses {_listed(shared)}, which only "
                "the correct option says")


def _fill_in_hint(card: FillInCard, base: Path) -> Iterator[Problem]:
    chips = {chip.id: chip.text for chip in card.chips}
    for blank in card.blanks:
        if blank.answer not in chips:
            continue  # content.lint reports it
        others = set().union(*(words(t) for c, t in chips.items() if c != blank.answer))
        shared = _key_words_in_hint(chips[blank.answer], others, card.hint)
        if shared:
            yield (*base, "hint"), (
                f"hint points at the answer of blank '{blank.id}': it uses {_listed(shared)}, "
                f"which only the chip '{chips[blank.answer]}' has")


def _slot_types(card: FillInCard, base: Path) -> Iterator[Problem]:
    chips = {chip.id: chip.text for chip in card.chips}
    for index, blank in enumerate(card.blanks):
        fits = fitting_chips(card, blank.id)
        # Judged only when the answer is a plain name or number: an expression chip could
        # be read as either kind.
        if fits != [blank.answer] or chip_kind(chips[blank.answer]) is None:
            continue
        kind = slot_kind(card.code, blank.id)
        misfits = [chips[c] for c in chips if c != blank.answer]
        plural = len(misfits) > 1
        other = ("method names" if plural else "a method name") if kind == "value" else (
            "not methods" if plural else "not a method")
        yield (*base, "blanks", index), (
            f"blank '{blank.id}' needs a {kind} and only the chip '{chips[blank.answer]}' is "
            f"one ({_listed(misfits)} {'are' if plural else 'is'} {other}), so the code alone "
            f"gives the answer away; add a wrong chip that is a plausible {kind}")


def _value_blanks(deck: Deck) -> Iterator[tuple[Path, str]]:
    """(path, answer chip text) of every blank the code says needs a value."""
    for index, card in enumerate(deck.cards):
        if not isinstance(card, FillInCard):
            continue
        chips = {chip.id: chip.text.strip() for chip in card.chips}
        for b, blank in enumerate(card.blanks):
            if blank.answer in chips and slot_kind(card.code, blank.id) == "value":
                yield ("cards", index, "blanks", b), chips[blank.answer]


def _one_value_answer(deck: Deck) -> Iterator[Problem]:
    blanks = list(_value_blanks(deck))
    answers = {answer for _, answer in blanks}
    if len(blanks) < ONE_VALUE_MIN_BLANKS or len(answers) != 1:
        return
    [answer] = answers
    for path, _ in blanks:
        yield path, (
            f"the chip '{answer}' answers every value blank of the deck ({len(blanks)} of "
            f"{len(blanks)}): a learner who always picks it is never wrong; give some value "
            "blank another answer")


