"""The decks a Tutor can serve: the bundled files plus every deck servers stored.

Several bot processes (shards) share one database, so the library cannot only change
when this process uploads: `refresh` asks the store for a cheap stamp at most every
`REFRESH_EVERY` (on serve), and reloads only when the stamp moved, parsing only versions
it has not parsed before. The process that changes a deck refreshes at once (`force`).
Which of these decks a server may see or plays is decided in `bot.engine.community_decks`.

So another process's library can be up to REFRESH_EVERY behind a new version: a served
card is judged on it only under the store's check that its deck is still at the version
the card was read from (`served_card`'s `DeckAt`, in the served card's compare-and-set:
`Advance.deck_id`); a judgment that fails it refreshes and looks again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa

from bot.engine.errors import StaleCard
from content.loader import AnyCard, DeckError, DeckLibrary, parse_deck
from content.schema import Deck

REFRESH_EVERY = timedelta(seconds=30)
# Where a card was read: (a stored deck's id, its version), or None for a bundled deck.
DeckAt = tuple[str, int] | None
log = logging.getLogger(__name__)


class LiveLibrary:
    def __init__(self, store, bundled: DeckLibrary, clock: Callable[[], datetime]):
        self.store, self.bundled, self.clock = store, bundled, clock
        self.stored: dict[str, sa.Row] = {}  # every stored deck's row, removed ones too
        # The library and the version of each stored deck in it, swapped as one value.
        self._loaded: tuple[DeckLibrary, dict[str, int]] = (bundled, {})
        self._parsed: dict[tuple[str, int], Deck] = {}
        self._stamp: tuple | None = None
        self._checked_at: datetime | None = None
        self._lock = threading.Lock()

    @property
    def library(self) -> DeckLibrary:
        if self._checked_at is None:
            self.refresh(force=True)
        return self._loaded[0]

    def served_card(self, card_id: str, card_rev: int) -> tuple[AnyCard, DeckAt]:
        """The card served at `card_rev`, and where it was read (`DeckAt`: both from one
        library, never a card of one version beside the number of another). StaleCard if
        the card is gone or its meaning changed since (a typo fix keeps it answerable)."""
        found = self._find(card_id)
        if found is None or card_rev > found[0].rev:
            self.refresh(force=True)  # served by a process that knew a newer deck
            found = self._find(card_id)
        if found is None:
            raise StaleCard("This card is no longer in the deck.")
        if card_rev < found[0].meaning_rev:
            raise StaleCard("This card was changed since it was served; ask for a new one.")
        return found

    def _find(self, card_id: str) -> tuple[AnyCard, DeckAt] | None:
        if self._checked_at is None:
            self.refresh(force=True)
        library, versions = self._loaded
        if not library.has_card(card_id):
            return None
        deck_id = library.deck_of(card_id).id
        version = versions.get(deck_id)
        return library.card(card_id), None if version is None else (deck_id, version)

    def refresh(self, force: bool = False) -> None:
        """Reload the stored decks if they changed; unless `force`, ask at most every
        REFRESH_EVERY."""
        now = self.clock()
        if not force and self._checked_at is not None and (
                now - self._checked_at < REFRESH_EVERY):
            return
        with self._lock:
            stamp = self.store.decks.stamp()
            self._checked_at = now
            if stamp == self._stamp:
                return
            rows = self.store.decks.all()
            loaded = [(row, deck) for row in rows if not row.removed
                      and (deck := self._parse(row)) is not None]
            self._loaded = (DeckLibrary([*self.bundled.decks.values(),
                                         *(deck for _, deck in loaded)]),
                            {row.deck_id: row.version for row, _ in loaded})
            self.stored = {row.deck_id: row for row in rows}
            self._stamp = stamp

    def _parse(self, row: sa.Row) -> Deck | None:
        if row.deck_id in self.bundled.decks:  # a file deck added later wins its id
            log.warning("stored deck %r shadowed by a bundled deck", row.deck_id)
            return None
        key = (row.deck_id, row.version)
        if key not in self._parsed:
            text = self.store.decks.yaml(row.deck_id, row.version)
            try:  # checked in full at upload; a later lint rule must not unload it
                self._parsed[key] = parse_deck(text, row.deck_id, giveaways=False)
            except DeckError as exc:
                log.error("stored deck %r v%d no longer loads: %s", *key, exc)
                return None
        return self._parsed[key]
