"""The bundled deck's code-option cards ("which loop is right?": every option reads "This
loop", and only its letter and code tell it apart), each alone in a library of its own so
that a front end serves it first."""

from __future__ import annotations

from content.loader import DeckLibrary
from content.schema import ChoiceCard

DECK = DeckLibrary.load().deck("gradient-accumulation")
CODE_OPTION_CARDS = [card.id for card in DECK.cards if isinstance(card, ChoiceCard)
                     and any(option.code for option in card.options)]
assert len(CODE_OPTION_CARDS) >= 4, CODE_OPTION_CARDS  # the cards these tests are for


def alone(card_id: str) -> DeckLibrary:
    """The bundled deck with this card only (its mistakes and texts as they are)."""
    return DeckLibrary([DECK.model_copy(update={"cards": [DECK.card(card_id)]})])
