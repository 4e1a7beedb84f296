"""The decks each server plays: the one place that decides it, for serving, /stats,
reminders and uploads alike. Serving needs only this, never the upload code
(`bot/engine/community_decks.py`), which builds on it."""

from __future__ import annotations

from typing import Literal

from bot.engine.deck_library import LiveLibrary
from content.schema import Deck
from scheduler.storage.store import Store

Origin = Literal["bundled", "uploaded", "shared"]  # a file deck; this server's; another's


class ServerDecks:
    def __init__(self, live: LiveLibrary, store: Store):
        self.live, self.store = live, store

    def enabled(self, guild_id: int) -> list[str]:
        """The deck ids this server plays: the ONE place that decides (serving, /deck
        enable|disable, uploads). No choice stored means every bundled deck; a chosen deck
        that is gone (removed, unpublished) is dropped, and when none is left the server
        plays the bundled decks again rather than nothing."""
        self.live.refresh()  # on serve: at most every 30 s unless forced
        chosen = self.store.decks.played(guild_id)
        bundled = list(self.default())
        if chosen is None:
            return bundled
        visible = self.visible(guild_id)
        return [d for d in visible if d in chosen] or bundled

    def default(self) -> tuple[str, ...]:
        """What a server plays until its admins choose: every bundled deck."""
        return tuple(self.live.bundled.decks)

    def visible(self, guild_id: int) -> dict[str, tuple[Deck, Origin]]:
        """Bundled decks, then this server's own, then published ones, by id."""
        library, live = self.live.library, self.live
        found: dict[str, tuple[Deck, Origin]] = {
            d: (library.deck(d), "bundled") for d in live.bundled.decks}
        rows = [r for r in live.stored.values() if not r.removed and r.deck_id in library.decks]
        for origin, rows_of in (("uploaded", [r for r in rows if r.owner_guild_id == guild_id]),
                                ("shared", [r for r in rows if r.owner_guild_id != guild_id
                                            and r.public])):
            for row in sorted(rows_of, key=lambda r: r.deck_id):
                found[row.deck_id] = (library.deck(row.deck_id), origin)
        return found
