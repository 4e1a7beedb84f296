"""The order a served card shows its options (or fill-in chips) in.

Shuffled once per serve, so a learner recalls the answer rather than its position, and
stored with the served card (`Served.order`), so every rendering of it (a re-render, a later
click, after a restart) shows the same letters. Only ids are stored: answers and review logs
never depend on a position.
"""

from __future__ import annotations

import random

from content.loader import AnyCard
from content.schema import Chip, ChoiceCard, FillInCard, Option

RECENT_ORDERS = 256
_recent_orders: dict[tuple[int, tuple[str, ...]], tuple[AnyCard, tuple]] = {}


def choices(card: AnyCard) -> list[Option] | list[Chip]:
    """A card's options or chips in deck order (none for a code card)."""
    if isinstance(card, ChoiceCard):
        return card.options
    if isinstance(card, FillInCard):
        return card.chips
    return []


def shuffled(card: AnyCard, seed: str) -> tuple[str, ...]:
    """A new order for one serve; seeded by the serve id, so it can be reproduced."""
    ids = [item.id for item in choices(card)]
    random.Random(seed).shuffle(ids)
    return tuple(ids)


def in_order(card: AnyCard, order: tuple[str, ...]) -> list[Option] | list[Chip]:
    """The card's options or chips as shown. An id the deck dropped since serving is skipped
    and one it added comes last, so a served card stays answerable; an empty order (a card
    stored before orders were) is the deck order. Remembered for the last few cards: one
    click judges and renders the same card in the same order three times."""
    key = (id(card), order)
    if (known := _recent_orders.get(key)) is not None and known[0] is card:
        return list(known[1])
    remaining = {item.id: item for item in choices(card)}
    shown = (*(remaining.pop(item_id) for item_id in order if item_id in remaining),
             *remaining.values())
    if len(_recent_orders) >= RECENT_ORDERS:
        _recent_orders.clear()
    _recent_orders[key] = (card, shown)  # the card itself: its id is not reused meanwhile
    return list(shown)
