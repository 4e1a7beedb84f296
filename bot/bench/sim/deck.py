"""A deck's cards as the simulation sees them: slots to fill, their choices, and which
mistake id each wrong choice stands for.

A multiple-choice card is one slot (its options); a fill-in card has one slot per blank (the
chips). Responses use the engine's own ids (an option id, or {blank: chip}), so the real
engine can judge the same answers (`bot.bench.sim.engine_policy`).
"""

from __future__ import annotations

from dataclasses import dataclass

from content.loader import AnyCard
from content.schema import ChoiceCard, FillInCard

__all__ = ["SimCard", "Slot", "sim_cards"]

DIFFICULTY_OFFSET = {"easy": -1.0, "medium": 0.0, "hard": 1.0}  # initial FSRS difficulty


@dataclass(frozen=True, slots=True)
class Slot:
    """One thing to choose: ``key`` is the blank id (None for a multiple-choice card)."""

    key: str | None
    choices: tuple[str, ...]
    answer: str
    mistakes: dict[str, str]  # wrong choice -> mistake id


@dataclass(frozen=True, slots=True)
class SimCard:
    id: str
    difficulty: str
    slots: tuple[Slot, ...]

    @property
    def mistake_ids(self) -> frozenset[str]:
        return frozenset(m for slot in self.slots for m in slot.mistakes.values())

    def response(self, picks: tuple[str, ...]):
        """The engine's response for one pick per slot."""
        if self.slots[0].key is None:
            return picks[0]
        return {slot.key: pick for slot, pick in zip(self.slots, picks, strict=True)}

    def wrong(self, picks: tuple[str, ...]) -> list[tuple[int, str]]:
        """(slot index, mistake id) for each wrong pick, as the engine's findings say."""
        pairs = enumerate(zip(self.slots, picks, strict=True))
        return [(i, slot.mistakes[pick]) for i, (slot, pick) in pairs if pick != slot.answer]


def sim_card(card: AnyCard) -> SimCard:
    if isinstance(card, ChoiceCard):
        answer = next(o.id for o in card.options if o.correct)
        slots = (Slot(None, tuple(o.id for o in card.options), answer,
                      {o.id: o.mistake for o in card.options if not o.correct}),)
    elif isinstance(card, FillInCard):
        chips = tuple(chip.id for chip in card.chips)
        slots = tuple(
            Slot(b.id, tuple(c for c in chips if c == b.answer or c in b.wrong), b.answer,
                 {chip: wrong.mistake for chip, wrong in b.wrong.items()})
            for b in card.blanks)
    else:
        raise ValueError(f"{card.id}: only multiple-choice and fill-in cards are simulated")
    return SimCard(card.id, card.difficulty, slots)


def sim_cards(cards: list[AnyCard]) -> list[SimCard]:
    """The multiple-choice and fill-in cards, in deck order (code cards need the sandbox,
    which the engine without a code judge never serves either)."""
    return [sim_card(card) for card in cards if isinstance(card, ChoiceCard | FillInCard)]
