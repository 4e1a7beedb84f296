"""Judging one attempt at a card: is the choice right, which mistake does each wrong choice
stand for, and the right answer in words (code cards are judged by their checkers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.engine.errors import InvalidAnswer
from content.loader import AnyCard, DeckLibrary
from content.schema import ChoiceCard, CodeCard, FillInCard

Response = str | Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Finding:
    """What one wrong choice does and the common mistake behind it."""

    choice: str
    says: str
    mistake_id: str
    mistake_title: str
    explanation: str
    blank: str | None = None


def judge_choice(library: DeckLibrary, card: ChoiceCard, response: Response):
    """(the option chosen, what is wrong with it); InvalidAnswer if it is not offered."""
    options = {option.id: option for option in card.options}
    if not isinstance(response, str) or response not in options:
        raise InvalidAnswer(f"Choose one of: {', '.join(options)}.")
    option = options[response]
    if option.correct:
        return option.id, ()
    mistake = library.mistake(card.id, option.mistake)
    finding = Finding(option.text, option.says or "", mistake.id, mistake.title,
                      mistake.explanation)
    return option.id, (finding,)


def judge_fill_in(library: DeckLibrary, card: FillInCard, response: Response):
    """({blank: chip}, what is wrong in each blank); InvalidAnswer unless every blank is
    filled with one of the card's chips."""
    chips = {chip.id: chip for chip in card.chips}
    if not isinstance(response, Mapping) or set(response) != {b.id for b in card.blanks}:
        raise InvalidAnswer(f"Fill every blank: {', '.join(b.id for b in card.blanks)}.")
    findings = []
    for blank in card.blanks:
        chip_id = response[blank.id]
        if chip_id not in chips:
            raise InvalidAnswer(f"'{chip_id}' is not one of this card's options.")
        if chip_id == blank.answer:
            continue
        wrong = blank.wrong[chip_id]
        mistake = library.mistake(card.id, wrong.mistake)
        findings.append(Finding(chips[chip_id].text, wrong.says, mistake.id,
                                mistake.title, mistake.explanation, blank.id))
    return {blank.id: response[blank.id] for blank in card.blanks}, tuple(findings)


def correct_answer(card: AnyCard) -> str:
    """The right answer in words, to reveal once the attempts are used."""
    if isinstance(card, ChoiceCard):
        return next(o.text for o in card.options if o.correct)
    if isinstance(card, FillInCard):
        chips = {chip.id: chip.text for chip in card.chips}
        return ", ".join(chips[b.answer] for b in card.blanks)
    return card.reference


def mistakes_of(card: AnyCard, chosen) -> list[str]:
    """The mistake ids one attempt showed. A choice the card no longer has (a version that
    dropped it while the card was in play) shows none: the card cannot say what it was."""
    if isinstance(card, CodeCard):
        return list(chosen["mistakes"])
    if isinstance(card, ChoiceCard):
        option = next((o for o in card.options if o.id == chosen), None)
        return [] if option is None or option.correct else [option.mistake]
    blanks = {b.id: b for b in card.blanks}
    return [blanks[b].wrong[c].mistake for b, c in chosen.items()
            if b in blanks and c in blanks[b].wrong]
