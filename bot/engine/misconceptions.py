"""Which mistakes a card tests, and a learner's misconceptions in words (for /stats and the
terminal). The rules for remedies are scheduler/remediation.py's."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from content.loader import AnyCard, DeckLibrary
from content.schema import tested_mistakes  # the deck's own notion (deck validate's notes)
from scheduler.storage.store import Store

__all__ = ["LearnerMistake", "deck_tests", "held_tests", "learner_mistakes", "mistake_title",
           "tested_mistakes"]


def deck_tests(library: DeckLibrary, deck_id: str) -> dict[str, frozenset[str]]:
    """Card id -> the mistake ids it tests, in deck order."""
    return {card.id: tested_mistakes(card) for card in library.cards(deck_id)}


def held_tests(library: DeckLibrary, cards: Iterable[AnyCard],
               held: Collection[tuple[str, str]]) -> dict[str, frozenset[str]]:
    """Card id -> the learner's open misconceptions (`held`: (deck id, mistake id)) it
    tests; mistake ids are a deck's own, so a card tests only those held in its deck."""
    if not held:
        return {}
    return {card.id: frozenset(m for m in tested_mistakes(card)
                               if (library.deck_of(card.id).id, m) in held)
            for card in cards}


@dataclass(frozen=True, slots=True)
class LearnerMistake:
    """One mistake a learner has shown, in words: open (still held) or corrected since."""

    deck_id: str
    mistake_id: str
    title: str
    is_open: bool  # chosen and not yet answered past (scheduler/remediation.py)
    times_shown: int
    last_shown_at: datetime
    last_corrected_at: datetime | None
    explanation: str = ""  # the deck's words for it ("" when its deck is gone)


def mistake_title(library: DeckLibrary, deck_id: str, mistake_id: str) -> str | None:
    """The title deck `deck_id` gives `mistake_id` (a mistake is its deck's: another deck
    may reuse the id with its own title); the id when the deck is gone; None when the deck
    no longer registers it."""
    if deck_id not in library.decks:
        return mistake_id
    mistake = library.deck_mistake(deck_id, mistake_id)
    return mistake.title if mistake else None


def learner_mistakes(store: Store, library: DeckLibrary, learner_id: int) -> list[LearnerMistake]:
    """The learner's misconceptions, open first. A mistake whose deck is gone keeps its id;
    one its deck no longer registers is left out: no card can test or correct it."""
    out = []
    for row in store.misconceptions.for_learner(learner_id):
        title = mistake_title(library, row.deck_id, row.mistake_id)
        if title is not None:
            mistake = library.deck_mistake(row.deck_id, row.mistake_id)
            out.append(LearnerMistake(row.deck_id, row.mistake_id, title, row.open,
                                      row.times_shown, row.last_shown_at, row.last_corrected_at,
                                      mistake.explanation if mistake else ""))
    return out
