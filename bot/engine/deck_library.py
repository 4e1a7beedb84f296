"""The decks a Tutor can serve: the bundled files plus every deck servers stored.

Several bot processes (shards) share one database, so the library cannot only change
when this process uploads: `refresh` asks the store for a cheap stamp at most every
`REFRESH_EVERY` (on serve), and reloads only when the stamp moved, parsing only versions
it has not parsed before. The process that changes a deck refreshes at once (`force`).
Which of these decks a server may see or plays is decided in `bot.engine.community_decks`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa

from content.loader import DeckError, DeckLibrary, parse_deck
from content.schema import Deck

REFRESH_EVERY = timedelta(seconds=30)
log = logging.getLogger(__name__)


class LiveLibrary:
    def __init__(self, store, bundled: DeckLibrary, clock: Callable[[], datetime]):
        self.store, self.bundled, self.clock = store, bundled, clock
        self.stored: dict[str, sa.Row] = {}  # every stored deck's row, removed ones too
        self._library = bundled
        self._parsed: dict[tuple[str, int], Deck] = {}
        self._stamp: tuple | None = None
        self._checked_at: datetime | None = None
        self._lock = threading.Lock()

    @property
    def library(self) -> DeckLibrary:
        if self._checked_at is None:
            self.refresh(force=True)
        return self._library

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
            decks = [deck for row in rows if not row.removed
                     and (deck := self._parse(row)) is not None]
            self._library = DeckLibrary([*self.bundled.decks.values(), *decks])
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
