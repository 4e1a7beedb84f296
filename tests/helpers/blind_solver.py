"""A blind solver: answers a deck's cards with test-taking tricks, knowing nothing of PyTorch.

Every multiple-choice card is one item (its options), every blank of a fill-in card is one
item (all the card's chips). Code cards are skipped. Each trick ranks the choices of an
item and picks among the best ones at random; its score on the item is the expected one,
1 / (number tied for best) when the key is among them, else 0. Chance is the mean of
1 / (number of choices). A trick that beats chance by much means the deck leaks answers.

Tricks:
- `longest`: the longest option or chip text (whitespace collapsed).
- `echo`: the choice sharing the most distinctive words with the prompt and hint
  (identifiers count their parts: `zero_grad` shares "grad" with ".grad").
- `slot_type`: for a blank, the chips whose kind (method or value) fits the code around
  the blank (`content.giveaways.slot_kind`), ties broken by `echo`; for an option, `echo`.
- `topic_chip`: the choice sharing the most word stems with the deck's title and the card's
  topics ("accumulation_steps" in a gradient-accumulation deck): "pick the one named after
  the chapter".
- `odd_one_out`: the choice most unlike the others (`tests.helpers.odd_one_out`): the one that
  alone differs in form (its lead word, a negation, a hedge such as "but only because", a
  cause, code or numbers, two clauses, its kind of chip) where the others agree, then the
  one sharing the fewest word stems with the rest.
- `no_absolutes`: any choice free of absolute or restricting words ("only", "always",
  "never", "all", ...), the old advice that sweeping claims are usually false.
- `shortest`: the shortest option or chip text, the mirror of `longest` ("the key is never
  the long one").
- `topic_word`: among the chips that fit the slot, the ones with a word of the deck's title
  as a whole word (`accumulation_steps`, not `accumulated_samples`, which only `topic_chip`'s
  stems join to it).
- `fewest_edits`: the option with the fewest line edits to all the others
  (`content.giveaways.line_edits`): when each wrong loop is the key with one call moved,
  the key is the centre. One-line texts all tie.
- `fresh_number`: the number chip the prompt and code do not state (the answer is computed
  from the prompt's numbers; lazy decoys are copied from it).
- `unused_name`: the chip naming a variable the snippet defines and never uses.

Every trick is judged both ways: far below chance is a give-away too ("never the longest"
means "rule out the longest").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from content.giveaway_tricks import (
    edit_totals,
    fresh_numbers,
    named_after,
    topic_words,
    unused_names,
)
from content.giveaway_words import chip_kind, slot_kind, words_with_parts
from content.schema import ChoiceCard, Deck, FillInCard
from tests.helpers.odd_one_out import absolutes, oddness, stems

TRICKS = ("longest", "shortest", "echo", "slot_type", "topic_chip", "topic_word",
          "odd_one_out", "no_absolutes", "fewest_edits", "fresh_number", "unused_name")


@dataclass(frozen=True)
class Choice:
    id: str
    text: str


@dataclass(frozen=True)
class Item:
    """One question: an MCQ card, or one blank of a fill-in card."""

    card_id: str
    blank: str | None  # None for an MCQ
    choices: tuple[Choice, ...]
    key: str
    clue: frozenset[str]  # the distinctive words of the prompt and hint
    slot: str | None = None  # 'method', 'value' or None (unsure / not a blank)
    topic: frozenset[str] = frozenset()  # stems of the deck title and the card's topics
    title: frozenset[str] = frozenset()  # the distinctive words of the deck's title
    codes: tuple[str, ...] = ()  # the options' code, when every option has some
    fresh: frozenset[str] = frozenset()  # ids of number chips the prompt does not state
    unused: frozenset[str] = frozenset()  # ids of chips defined in the code and never used

    @property
    def label(self) -> str:
        return self.card_id + (f" [[{self.blank}]]" if self.blank else "")


@dataclass
class TrickResult:
    trick: str
    accuracy: float  # mean expected score over the items
    chance: float  # mean of 1 / number of choices over the same items
    scores: dict[str, float] = field(default_factory=dict)  # item label -> expected score
    # The same over the items where the trick tells choices apart (picks fewer than all):
    # a trick for one kind of card (code options, number chips) is judged where it applies.
    applied_accuracy: float = 0.0
    applied_chance: float = 0.0
    applied: list[str] = field(default_factory=list)  # labels of those items

    @property
    def margin(self) -> float:
        return self.accuracy - self.chance

    @property
    def applied_margin(self) -> float:
        return self.applied_accuracy - self.applied_chance

    def right(self) -> list[tuple[str, float]]:
        """The items the trick gets right (1.0) or partly right (a tie holding the key)."""
        return [(label, score) for label, score in self.scores.items() if score > 0]


def items(deck: Deck) -> list[Item]:
    found: list[Item] = []
    title = frozenset(topic_words(deck))
    for card in deck.cards:
        clue = frozenset(words_with_parts(card.prompt) | words_with_parts(card.hint))
        topic = frozenset(stems(" ".join([deck.title, *card.topics])))
        if isinstance(card, ChoiceCard):
            keys = [o.id for o in card.options if o.correct]
            if len(keys) == 1:
                choices = tuple(Choice(o.id, o.text) for o in card.options)
                codes = tuple(o.code or "" for o in card.options)
                found.append(Item(card.id, None, choices, keys[0], clue, topic=topic,
                                  title=title,
                                  codes=codes if all(codes) else ()))
        elif isinstance(card, FillInCard):
            choices = tuple(Choice(c.id, c.text) for c in card.chips)
            fresh = frozenset(c.id for c, f in zip(card.chips, fresh_numbers(card),
                                                   strict=True) if f)
            unused = frozenset(c.id for c, u in zip(card.chips, unused_names(card),
                                                    strict=True) if u)
            for blank in card.blanks:
                found.append(Item(card.id, blank.id, choices, blank.answer, clue,
                                  slot_kind(card.code, blank.id), topic, title,
                                  fresh=fresh, unused=unused))
    return found


def _best(choices: Sequence[Choice], score: Callable[[Choice], float]) -> list[Choice]:
    top = max(score(c) for c in choices)
    return [c for c in choices if score(c) == top]


def _length(choice: Choice) -> float:
    return len(" ".join(choice.text.split()))


def _echo_score(item: Item) -> Callable[[Choice], float]:
    return lambda choice: len(words_with_parts(choice.text) & item.clue)


def pick_longest(item: Item) -> list[Choice]:
    return _best(item.choices, _length)


def pick_echo(item: Item) -> list[Choice]:
    return _best(item.choices, _echo_score(item))


def pick_shortest(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: -_length(choice))


def _fitting(item: Item) -> list[Choice]:
    fitting = [c for c in item.choices if chip_kind(c.text) in (item.slot, None)]
    return fitting if item.slot and fitting else list(item.choices)


def pick_slot_type(item: Item) -> list[Choice]:
    return _best(_fitting(item), _echo_score(item))


def pick_topic_word(item: Item) -> list[Choice]:
    pool = _fitting(item)
    named = named_after([c.text for c in pool], set(item.title), stemmed=False)
    return _best(pool, lambda choice: named[pool.index(choice)])


def pick_fewest_edits(item: Item) -> list[Choice]:
    texts = list(item.codes) or [c.text for c in item.choices]
    totals = edit_totals(texts)
    return _best(item.choices, lambda choice: -totals[item.choices.index(choice)])


def pick_fresh_number(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: choice.id in item.fresh)


def pick_unused_name(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: choice.id in item.unused)


def pick_topic_chip(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: len(stems(choice.text) & item.topic))


def pick_odd_one_out(item: Item) -> list[Choice]:
    odd = oddness([c.text for c in item.choices])
    return _best(item.choices, lambda choice: odd[item.choices.index(choice)])


def pick_no_absolutes(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: -absolutes(choice.text))


PICKERS: dict[str, Callable[[Item], list[Choice]]] = {
    "longest": pick_longest, "shortest": pick_shortest, "echo": pick_echo,
    "slot_type": pick_slot_type, "topic_chip": pick_topic_chip,
    "topic_word": pick_topic_word, "odd_one_out": pick_odd_one_out,
    "no_absolutes": pick_no_absolutes, "fewest_edits": pick_fewest_edits,
    "fresh_number": pick_fresh_number, "unused_name": pick_unused_name,
}


def expected_score(item: Item, picked: Sequence[Choice]) -> float:
    return 1 / len(picked) if any(c.id == item.key for c in picked) else 0.0


def solve(deck: Deck) -> dict[str, TrickResult]:
    """Per trick: its expected accuracy over the deck's MCQs and blanks, and chance; and
    both over the items where the trick picks fewer than all the choices."""
    questions = items(deck)
    if not questions:
        return {trick: TrickResult(trick, 0.0, 0.0) for trick in TRICKS}
    chance = sum(1 / len(q.choices) for q in questions) / len(questions)
    results = {}
    for trick in TRICKS:
        scores: dict[str, float] = {}
        applied: list[Item] = []
        for q in questions:
            picked = PICKERS[trick](q)
            scores[q.label] = expected_score(q, picked)
            if len(picked) < len(q.choices):
                applied.append(q)
        result = TrickResult(trick, sum(scores.values()) / len(questions), chance, scores)
        if applied:
            result.applied = [q.label for q in applied]
            result.applied_accuracy = sum(scores[q.label] for q in applied) / len(applied)
            result.applied_chance = sum(1 / len(q.choices) for q in applied) / len(applied)
        results[trick] = result
    return results


def report(deck: Deck, results: dict[str, TrickResult] | None = None) -> str:
    """A readable summary: per trick accuracy vs chance and the items it got right."""
    results = results or solve(deck)
    lines = [f"deck {deck.id}: {len(items(deck))} items (MCQ cards and blanks)"]
    for result in results.values():
        lines.append(f"  {result.trick}: {result.accuracy:.0%} vs chance {result.chance:.0%} "
                     f"({result.margin * 100:+.0f} points); where it applies "
                     f"({len(result.applied)} items) {result.applied_accuracy:.0%} vs "
                     f"{result.applied_chance:.0%} ({result.applied_margin * 100:+.0f} points)")
        lines += [f"    {label}: {score:.2f}" for label, score in result.right()]
    return "\n".join(lines)
