"""Cross-reference checks a schema alone cannot express.

Each problem is reported with the path of the YAML node it concerns, so the loader can
turn it into `file:line: message`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from content import checkers
from content.checkers.behaviour import MAX_GIVEN, NAME_MAX
from content.exercise_code import code_problems
from content.giveaway_words import spells_out
from content.giveaways import check_giveaways
from content.schema import BLANK_RE, ChoiceCard, CodeCard, Deck, FillInCard, tested_mistakes

Path = tuple[Any, ...]
Problem = tuple[Path, str]


def check_deck(deck: Deck, *, giveaways: bool = True) -> list[Problem]:
    """Every cross-reference problem, then (unless `giveaways` is off) every answer the
    deck gives away (`content.giveaways`)."""
    problems = list(_deck_problems(deck))
    if giveaways:
        problems += check_giveaways(deck)
    return problems


def remediation_notes(deck: Deck) -> list[Problem]:
    """Notes, not problems: each mistake that only one card tests. Remediation brings a
    learner's *other* cards on a mistake they just made forward, so it needs two."""
    cards: dict[str, list[str]] = {}
    for card in deck.cards:
        for mistake in tested_mistakes(card):
            cards.setdefault(mistake, []).append(card.id)
    return [(("mistakes", index, "id"),
             f"note: mistake '{mistake.id}' is tested by one card only ({only[0]}): "
             "remediation needs two")
            for index, mistake in enumerate(deck.mistakes)
            if len(only := cards.get(mistake.id, [])) == 1]


def _duplicates(ids: list[str]) -> set[str]:
    return {i for i, n in Counter(ids).items() if n > 1}


def _unique(items: list, base: Path, what: str) -> Iterator[Problem]:
    dupes = _duplicates([item.id for item in items])
    for index, item in enumerate(items):
        if item.id in dupes:
            yield (*base, index, "id"), f"duplicate {what} id '{item.id}'"


def _deck_problems(deck: Deck) -> Iterator[Problem]:
    yield from _unique(deck.mistakes, ("mistakes",), "mistake")
    yield from _unique(deck.cards, ("cards",), "card")
    known = {m.id for m in deck.mistakes}
    used: set[str] = set()
    for index, card in enumerate(deck.cards):
        base: Path = ("cards", index)
        if card.content_rev and card.content_rev > card.rev:
            yield (*base, "content_rev"), "content_rev cannot be newer than rev"
        if not card.id.startswith(deck.id + "/"):
            yield (*base, "id"), f"card id '{card.id}' must start with the deck id '{deck.id}/'"
        refs: list[tuple[Path, str]] = []
        if isinstance(card, FillInCard):
            yield from _fill_in_problems(card, base, refs)
        elif isinstance(card, ChoiceCard):
            yield from _choice_problems(card, base, refs)
        elif isinstance(card, CodeCard):
            refs += [((*base, "mistakes", i), m) for i, m in enumerate(card.mistakes)]
            yield from _behaviour_problems(card, base)
        for path, mistake_id in refs:
            used.add(mistake_id)
            if mistake_id not in known:
                yield path, f"unknown mistake id '{mistake_id}'"
    for index, mistake in enumerate(deck.mistakes):
        if mistake.id not in used:
            yield ("mistakes", index, "id"), f"mistake '{mistake.id}' is never used by a card"


def _behaviour_problems(card: CodeCard, base: Path) -> Iterator[Problem]:
    """A `behaviour` card has its exercise, with one wrong version per mistake it lists."""
    block = card.behaviour
    if card.checker != checkers.BEHAVIOUR:
        if block is not None:
            yield (*base, "behaviour"), (f"a behaviour block is read only with 'checker: "
                                         f"{checkers.BEHAVIOUR}', not '{card.checker}'")
        return
    if block is None:
        yield (*base, "checker"), ("checker 'behaviour' needs the card's behaviour block: "
                                   "entry, cases, compare and versions")
        return
    if missing := [m for m in card.mistakes if m not in block.versions]:
        yield (*base, "behaviour", "versions"), (
            f"no wrong version for {', '.join(missing)}: each mistake the card lists needs "
            "the code that makes it, so that a learner's answer can be recognised")
    for version in block.versions:
        if version not in card.mistakes:
            yield (*base, "behaviour", "versions", version), (
                f"version '{version}' is not one of the card's mistakes: list it there too")
    if len(card.given_names) > MAX_GIVEN:
        yield (*base, "given_names"), f"a behaviour card gives at most {MAX_GIVEN} names"
    for i, name in enumerate(card.given_names):
        if not name.isidentifier() or len(name) > NAME_MAX:
            yield (*base, "given_names", i), f"'{name[:80]}' is not a Python name"
    yield from code_problems(card, base)


def _leaks(hint: str, answer: str) -> bool:
    """True when the hint spells out the answer as a whole word or phrase, in any case.

    A preceding dot still counts: "call optimizer.zero_grad()" gives away `zero_grad`.
    """
    return spells_out(hint, answer)


def _fill_in_problems(card: FillInCard, base: Path, refs: list) -> Iterator[Problem]:
    yield from _unique(card.chips, (*base, "chips"), "chip")
    yield from _unique(card.blanks, (*base, "blanks"), "blank")
    chips = {chip.id: chip for chip in card.chips}
    markers = BLANK_RE.findall(card.code)
    blank_ids = [blank.id for blank in card.blanks]
    for marker in sorted(set(markers) - set(blank_ids)):
        yield (*base, "code"), f"code has marker [[{marker}]] but no blank '{marker}'"
    for marker, count in Counter(markers).items():
        if count > 1:
            yield (*base, "code"), f"marker [[{marker}]] appears {count} times"
    if [m for m in markers if m in blank_ids] != [b for b in blank_ids if b in markers]:
        yield (*base, "blanks"), "blanks must be listed in the order they appear in the code"
    for index, blank in enumerate(card.blanks):
        where: Path = (*base, "blanks", index)
        if blank.id not in markers:
            yield (*where, "id"), f"blank '{blank.id}' has no [[{blank.id}]] marker in the code"
        if blank.answer not in chips:
            yield (*where, "answer"), f"answer '{blank.answer}' is not a chip of this card"
            continue
        if _leaks(card.hint, chips[blank.answer].text):
            yield (*base, "hint"), f"hint gives away the answer '{chips[blank.answer].text}'"
        expected = set(chips) - {blank.answer}
        for chip_id in sorted(expected - set(blank.wrong)):
            yield (*where, "wrong"), f"wrong chip '{chip_id}' has no explanation"
        for chip_id, choice in blank.wrong.items():
            if chip_id not in expected:
                yield (*where, "wrong", chip_id), f"'{chip_id}' is not a wrong chip for this blank"
            refs.append(((*where, "wrong", chip_id, "mistake"), choice.mistake))


def _choice_problems(card: ChoiceCard, base: Path, refs: list) -> Iterator[Problem]:
    yield from _unique(card.options, (*base, "options"), "option")
    correct = [o for o in card.options if o.correct]
    if len(correct) != 1:
        yield (*base, "options"), f"exactly one option must be correct, found {len(correct)}"
    for option in correct:
        if _leaks(card.hint, option.text):
            yield (*base, "hint"), "hint gives away the correct option"
    for index, option in enumerate(card.options):
        where: Path = (*base, "options", index)
        if option.correct:
            if option.mistake or option.says:
                yield where, "the correct option takes no mistake or says"
            continue
        if not option.mistake:
            yield where, f"wrong option '{option.id}' needs a mistake id"
        else:
            refs.append(((*where, "mistake"), option.mistake))
        if not (option.says or "").strip():
            yield where, f"wrong option '{option.id}' needs 'says': what choosing it does"
