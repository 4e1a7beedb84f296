"""The give-away checks that answer like a test-taker who knows no PyTorch (b, f-j of
`content.giveaways`): pick by length, by the topic's word, by fewest line edits, by the
number the prompt does not state, by the name the snippet never uses."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from content.giveaway_words import (
    NUMBER_RE,
    Path,
    Problem,
    fitting_chips,
    stem,
    stems,
    words,
    words_with_parts,
)
from content.schema import BLANK_RE, ChoiceCard, Deck, FillInCard

# (b) Chance puts the key strictly longest in at most 1 of 3 cards with 3+ options. More
# than half of them, and at least 3 cards (below that a streak is common: two 3-option
# cards are both "longest" once in 9 decks), is more than chance explains.
LONGEST_MIN_OPTIONS = 3
LONGEST_MIN_CARDS = 3


def _option_length(option: Any) -> int:
    return len(" ".join(option.text.split()))


def longest_key(card: ChoiceCard) -> bool:
    """True when the correct option is strictly longer than every other option."""
    keys = [o for o in card.options if o.correct]
    if len(keys) != 1:
        return False
    longest = max(_option_length(o) for o in card.options if not o.correct)
    return _option_length(keys[0]) > longest


def _longest_keys(deck: Deck) -> Iterator[Problem]:
    counted = [(i, card) for i, card in enumerate(deck.cards)
               if isinstance(card, ChoiceCard) and len(card.options) >= LONGEST_MIN_OPTIONS]
    yield from _streak(counted, longest_key, (
        "longest", f"multiple-choice cards with {LONGEST_MIN_OPTIONS}+ options",
        "shorten it or lengthen a wrong option"))


def _streak(counted: list[tuple[int, ChoiceCard]], extreme,
            words: tuple[str, str, str]) -> Iterator[Problem]:
    """Each key that is ``extreme`` (the longest, the shortest) in more than half of the
    ``counted`` cards, and at least LONGEST_MIN_CARDS of them: more than chance explains."""
    offenders = [(i, card) for i, card in counted if extreme(card)]
    if len(offenders) < LONGEST_MIN_CARDS or 2 * len(offenders) <= len(counted):
        return
    end, cards, fix = words
    for index, card in offenders:
        key = next(i for i, o in enumerate(card.options) if o.correct)
        yield ("cards", index, "options", key, "text"), (
            f"the correct option is the {end} one here, as in {len(offenders)} of the "
            f"deck's {len(counted)} {cards}: 'pick the {end}' beats chance; {fix}")


# --- f. key length, both sides -----------------------------------------------------------------

# A rank test needs a few cards: below this many, any order is common by chance.
RANK_MIN_CARDS = 6
# Two-sided, as the FSRS gate: 1.96 standard errors leave a fair deck flagged 1 time in 20
# at most, and only one whose keys really lean to one end is flagged often.
RANK_Z = 1.96


def _text_choices(deck: Deck) -> list[tuple[int, ChoiceCard]]:
    """(index, card) of the multiple-choice cards whose options are told apart by text."""
    return [(i, card) for i, card in enumerate(deck.cards)
            if isinstance(card, ChoiceCard) and len(card.options) >= LONGEST_MIN_OPTIONS
            and sum(o.correct for o in card.options) == 1
            and not any(o.code for o in card.options)]


def shortest_key(card: ChoiceCard) -> bool:
    """True when the correct option is strictly shorter than every other option."""
    keys = [o for o in card.options if o.correct]
    if len(keys) != 1:
        return False
    shortest = min(_option_length(o) for o in card.options if not o.correct)
    return _option_length(keys[0]) < shortest


def key_length_rank(card: ChoiceCard) -> float:
    """Where the key's length falls among the options': 0 the shortest, 1 the longest, ties
    at their middle rank (so a key as long as every other option is 0.5)."""
    key = next(o for o in card.options if o.correct)
    mine = _option_length(key)
    others = [_option_length(o) for o in card.options if not o.correct]
    below = sum(length < mine for length in others)
    tied = sum(length == mine for length in others)
    return (below + tied / 2) / len(others)


def _rank_variance(n: int) -> float:
    """The variance of `key_length_rank` for a key placed at random among n distinct
    lengths: a uniform rank over 0, 1/(n-1), ..., 1."""
    return (n + 1) / (12 * (n - 1))


def _shortest_keys(deck: Deck) -> Iterator[Problem]:
    yield from _streak(_text_choices(deck), shortest_key, (
        "shortest", "text multiple-choice cards", "lengthen it or shorten a wrong option"))


def _key_length_rank(deck: Deck) -> Iterator[Problem]:
    counted = _text_choices(deck)
    if len(counted) < RANK_MIN_CARDS:
        return
    ranks = [key_length_rank(card) for _, card in counted]
    mean = sum(ranks) / len(ranks)
    error = math.sqrt(sum(_rank_variance(len(card.options)) for _, card in counted)) / len(
        counted)
    if abs(mean - 0.5) <= RANK_Z * error:
        return
    side = "short" if mean < 0.5 else "long"
    for (index, card), rank in zip(counted, ranks, strict=True):
        if (rank < 0.5) if side == "short" else (rank > 0.5):
            key = next(i for i, o in enumerate(card.options) if o.correct)
            yield ("cards", index, "options", key, "text"), (
                f"the keys of the deck's text multiple-choice cards lean to the {side} end: "
                f"their mean length rank is {mean:.2f} (0 shortest, 1 longest; by chance "
                f"0.5 +/- {RANK_Z * error:.2f}), so 'pick the {side}er ones' beats chance; "
                f"this key is {side}er than most of its options")


# --- g. the chip named after the topic ----------------------------------------------------------

# More than half of the blanks with a chip named after the topic: the name is the answer
# more often than chance (at most one in two: such a chip stands among one other at least).
TOPIC_MIN_BLANKS = 3
TOPIC_SHARE = 0.5


def topic_words(deck: Deck) -> set[str]:
    """The distinctive words of the deck's title ("gradient", "accumulation", "pytorch")."""
    return words(deck.title)


def named_after(texts: Iterable[str], topic: set[str], *, stemmed: bool) -> list[bool]:
    """Per text: whether it has a word of `topic` as a whole word (identifier parts count:
    `accumulation_steps` has "accumulation"), or with `stemmed`, a stem of one
    (`accumulated_samples` then meets "accumulation")."""
    if stemmed:
        wanted = {stem(word) for word in topic}
        return [bool(stems(text) & wanted) for text in texts]
    return [bool(words_with_parts(text) & topic) for text in texts]


def _blank_choices(deck: Deck) -> Iterator[tuple[Path, FillInCard, list[str], int]]:
    """(path, card, chip texts, index of the answer chip) of every blank, the chips limited
    to those whose kind fits the slot (a learner rules out a method where a value goes)."""
    for index, card in enumerate(deck.cards):
        if not isinstance(card, FillInCard):
            continue
        for b, blank in enumerate(card.blanks):
            fits = fitting_chips(card, blank.id)
            chips = [c for c in card.chips if fits is None or not fits or c.id in fits]
            ids = [chip.id for chip in chips]
            if blank.answer in ids:
                yield (("cards", index, "blanks", b), card, [c.text for c in chips],
                       ids.index(blank.answer))


def _topic_word(deck: Deck) -> Iterator[Problem]:
    topic = topic_words(deck)
    for stemmed in (False, True):
        scored = []
        for path, _, texts, key in _blank_choices(deck):
            named = named_after(texts, topic, stemmed=stemmed)
            if any(named) and not all(named):
                scored.append((path, texts[key], named[key] / sum(named)))
        if len(scored) < TOPIC_MIN_BLANKS:
            continue
        accuracy = sum(score for _, _, score in scored) / len(scored)
        if accuracy <= TOPIC_SHARE:
            continue
        how = "a stem of" if stemmed else "a word of"
        for path, answer, score in scored:
            if score:
                yield path, (
                    f"the chip '{answer}' has {how} the deck's title, and picking such a chip "
                    f"answers {accuracy:.0%} of the {len(scored)} blanks that offer one: give "
                    "a blank another answer or add a wrong chip named after the topic")
        return  # the stems would report the same blanks again


# --- h. the key with the fewest line edits to the others ----------------------------------------

def _code_lines(code: str) -> list[str]:
    return [line.rstrip() for line in code.strip("\n").splitlines() if line.strip()]


def line_edits(a: str, b: str) -> int:
    """Lines inserted, deleted or replaced to turn code `a` into code `b` (Levenshtein over
    lines, trailing spaces and blank lines ignored): a moved call costs 2."""
    x, y = _code_lines(a), _code_lines(b)
    previous = list(range(len(y) + 1))
    for i, line in enumerate(x, 1):
        current = [i]
        for j, other in enumerate(y, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (line != other)))
        previous = current
    return previous[-1]


def edit_totals(texts: list[str]) -> list[int]:
    """Per choice: its line edits to all the other choices (the medoid has the fewest)."""
    return [sum(line_edits(t, u) for u in texts) for t in texts]


def _fewest_edits(card: ChoiceCard, base: Path) -> Iterator[Problem]:
    options = card.options
    if len(options) < 3 or not all(o.code for o in options):
        return
    keys = [i for i, o in enumerate(options) if o.correct]
    if len(keys) != 1:
        return
    totals = edit_totals([o.code or "" for o in options])
    [key] = keys
    if all(totals[key] < t for i, t in enumerate(totals) if i != key):
        yield (*base, "options", key, "code"), (
            f"the correct loop is the one with the fewest line edits to all the others "
            f"({totals[key]} against {min(t for i, t in enumerate(totals) if i != key)} at "
            "best): each wrong one is the key with one change, so the centre is the key; "
            "make the wrong loops differ from each other as much as from the key")


# --- i. the only number not copied from the prompt ----------------------------------------------

def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    if not NUMBER_RE.fullmatch(text):
        return None
    return float(text)


def numbers_in(text: str | None) -> set[float]:
    """The numbers a text states (1,000 and 1000 alike)."""
    found = set()
    for match in re.finditer(r"(?<![\w.])\d[\d,]*(\.\d+)?", text or ""):
        value = _number(match.group(0).rstrip(","))
        if value is not None:
            found.add(value)
    return found


def fresh_numbers(card: FillInCard) -> list[bool]:
    """Per chip: whether it is a number the prompt and code do not state."""
    stated = numbers_in(card.prompt) | numbers_in(BLANK_RE.sub(" ", card.code))
    flags = []
    for chip in card.chips:
        value = _number(chip.text)
        flags.append(value is not None and value not in stated)
    return flags


def _fresh_number(card: FillInCard, base: Path) -> Iterator[Problem]:
    numeric = [_number(chip.text) is not None for chip in card.chips]
    if sum(numeric) < 3:
        return
    yield from _only_one(card, base, fresh_numbers(card), (
        "the only number chip the prompt does not state: the others are copied from it, so "
        "'pick the new number' finds it; add a wrong chip computed from the prompt's numbers "
        "the wrong way"))


def _only_one(card: FillInCard, base: Path, marked: list[bool],
              says: str) -> Iterator[Problem]:
    """Each blank answered by the one chip ``marked`` (a trait no other chip has)."""
    ids = [chip.id for chip in card.chips]
    for index, blank in enumerate(card.blanks):
        if blank.answer in ids and sum(marked) == 1 and marked[ids.index(blank.answer)]:
            yield (*base, "blanks", index), f"the answer of blank '{blank.id}' is {says}"


# --- j. the only variable defined and never used --------------------------------------------------

_BLANK_NAME = "_tutor_blank_"


def unused_names(card: FillInCard) -> list[bool]:
    """Per chip: whether it names a variable the code assigns and never reads, the blanks
    left out (a code that does not parse: none)."""
    try:
        tree = ast.parse(BLANK_RE.sub(_BLANK_NAME, card.code))
    except SyntaxError:
        return [False] * len(card.chips)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Load)}
    # `total += x` reads total as well: a running sum is used.
    loaded |= {n.target.id for n in ast.walk(tree) if isinstance(n, ast.AugAssign)
               and isinstance(n.target, ast.Name)}
    return [chip.text.strip() in stored - loaded for chip in card.chips]


def _unused_name(card: FillInCard, base: Path) -> Iterator[Problem]:
    yield from _only_one(card, base, unused_names(card), (
        "the only chip naming a variable the code defines and never uses: 'pick the unused "
        "one' finds it; use it elsewhere too, or define a wrong chip's variable that is also "
        "left unused"))


def card_problems(card: ChoiceCard | FillInCard, base: Path) -> Iterator[Problem]:
    """The tricks one card can be read by."""
    if isinstance(card, ChoiceCard):
        yield from _fewest_edits(card, base)
    elif isinstance(card, FillInCard):
        yield from _fresh_number(card, base)
        yield from _unused_name(card, base)


def deck_problems(deck: Deck) -> Iterator[Problem]:
    """The tricks that only a run of cards gives away."""
    yield from _longest_keys(deck)
    yield from _shortest_keys(deck)
    yield from _key_length_rank(deck)
    yield from _topic_word(deck)
