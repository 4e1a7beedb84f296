"""Titles are one line. Lists, menus and replies show a deck's title and its mistakes'
titles inline, in every server that can see the deck: a line break in one would start a
line of the author's own there (a fake "**Played here**" header). An upload is refused
(content/untrusted.py); decks already stored still load, and show titles on one line
(`safe_text.literal`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from content.safe_text import plain
from content.schema import ChoiceCard, Deck

Problem = tuple[tuple[Any, ...], str]


def title_problems(deck: Deck) -> Iterator[Problem]:
    """(YAML path, message) for every title on more than one line, counting each line
    break a front end shows as one (`plain`: CR, VT, FF, NEL, LS and PS too)."""
    titled = [(("title",), deck.title, "the deck title")]
    titled += [(("mistakes", i, "title"), m.title, f"the title of mistake '{m.id}'")
               for i, m in enumerate(deck.mistakes)]
    titled += [(("cards", c, "solution", i, "title"), step.title, "a solution step's title")
               for c, card in enumerate(deck.cards) if isinstance(card, ChoiceCard)
               for i, step in enumerate(card.solution)]
    for path, title, what in titled:
        if "\n" in plain(title):
            yield path, (f"{what} must be one line: titles are shown inside lists and "
                         "replies; put the rest in the description or explanation")
