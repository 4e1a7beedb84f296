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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from content.giveaways import chip_kind, slot_kind, words_with_parts
from content.schema import ChoiceCard, Deck, FillInCard
from tests.helpers.odd_one_out import absolutes, oddness, stems

TRICKS = ("longest", "echo", "slot_type", "topic_chip", "odd_one_out",
          "no_absolutes")


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

    @property
    def label(self) -> str:
        return self.card_id + (f" [[{self.blank}]]" if self.blank else "")


@dataclass
class TrickResult:
    trick: str
    accuracy: float  # mean expected score over the items
    chance: float  # mean of 1 / number of choices over the same items
    scores: dict[str, float] = field(default_factory=dict)  # item label -> expected score

    @property
    def margin(self) -> float:
        return self.accuracy - self.chance

    def right(self) -> list[tuple[str, float]]:
        """The items the trick gets right (1.0) or partly right (a tie holding the key)."""
        return [(label, score) for label, score in self.scores.items() if score > 0]


def items(deck: Deck) -> list[Item]:
    found: list[Item] = []
    for card in deck.cards:
        clue = frozenset(words_with_parts(card.prompt) | words_with_parts(card.hint))
        topic = frozenset(stems(" ".join([deck.title, *card.topics])))
        if isinstance(card, ChoiceCard):
            keys = [o.id for o in card.options if o.correct]
            if len(keys) == 1:
                choices = tuple(Choice(o.id, o.text) for o in card.options)
                found.append(Item(card.id, None, choices, keys[0], clue, topic=topic))
        elif isinstance(card, FillInCard):
            choices = tuple(Choice(c.id, c.text) for c in card.chips)
            for blank in card.blanks:
                found.append(Item(card.id, blank.id, choices, blank.answer, clue,
                                  slot_kind(card.code, blank.id), topic))
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


def pick_slot_type(item: Item) -> list[Choice]:
    fitting = [c for c in item.choices if chip_kind(c.text) in (item.slot, None)]
    pool = fitting if item.slot and fitting else list(item.choices)
    return _best(pool, _echo_score(item))


def pick_topic_chip(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: len(stems(choice.text) & item.topic))


def pick_odd_one_out(item: Item) -> list[Choice]:
    odd = oddness([c.text for c in item.choices])
    return _best(item.choices, lambda choice: odd[item.choices.index(choice)])


def pick_no_absolutes(item: Item) -> list[Choice]:
    return _best(item.choices, lambda choice: -absolutes(choice.text))


PICKERS: dict[str, Callable[[Item], list[Choice]]] = {
    "longest": pick_longest, "echo": pick_echo, "slot_type": pick_slot_type,
    "topic_chip": pick_topic_chip, "odd_one_out": pick_odd_one_out,
    "no_absolutes": pick_no_absolutes,
}


def expected_score(item: Item, picked: Sequence[Choice]) -> float:
    return 1 / len(picked) if any(c.id == item.key for c in picked) else 0.0


def solve(deck: Deck) -> dict[str, TrickResult]:
    """Per trick: its expected accuracy over the deck's MCQs and blanks, and chance."""
    questions = items(deck)
    if not questions:
        return {trick: TrickResult(trick, 0.0, 0.0) for trick in TRICKS}
    chance = sum(1 / len(q.choices) for q in questions) / len(questions)
    results = {}
    for trick in TRICKS:
        scores: dict[str, float] = {}
        for q in questions:
            scores[q.label] = expected_score(q, PICKERS[trick](q))
        results[trick] = TrickResult(trick, sum(scores.values()) / len(questions), chance, scores)
    return results


def report(deck: Deck, results: dict[str, TrickResult] | None = None) -> str:
    """A readable summary: per trick accuracy vs chance and the items it got right."""
    results = results or solve(deck)
    lines = [f"deck {deck.id}: {len(items(deck))} items (MCQ cards and blanks)"]
    for result in results.values():
        lines.append(f"  {result.trick}: {result.accuracy:.0%} vs chance {result.chance:.0%} "
                     f"({result.margin * 100:+.0f} points)")
        lines += [f"    {label}: {score:.2f}" for label, score in result.right()]
    return "\n".join(lines)
