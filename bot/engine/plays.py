"""The decks a learner plays here: the one notion that serving, /stats, reminders,
/practice topics, /insights and the /stats review buttons share (issue 25).

In a server: the decks its admins enabled (`ServerDecks.enabled`, the one place that
decides a server's choice: removed decks and decks no longer shared drop out there).
Outside a server (a DM, a reminder): those of the server the learner used last
(`guild_member.last_seen_at`; the same server whose scheduler applies there, see
`Tutor.choice`). A learner who never used a server plays the bundled decks.
"""

from __future__ import annotations

from datetime import date, timedelta

from bot.engine.outcomes import Progress
from bot.engine.served import Served
from bot.engine.server_decks import ServerDecks
from bot.engine.tutor import Tutor
from content.loader import AnyCard, DeckLibrary
from scheduler.choice import DUE_KEYS
from scheduler.storage.models import Learner
from scheduler.storage.store import Store


class Plays:
    def __init__(self, tutor: Tutor, store: Store, server: ServerDecks):
        self.tutor, self.store, self.server = tutor, store, server
        # Card ids by decks played, for the library they were read from: a reminder
        # sweep asks for thousands of learners who mostly play the same few deck lists.
        self._ids: tuple[DeckLibrary | None, dict[tuple[str, ...], frozenset[str]]] = (
            None, {})

    def home(self, learner_id: int, guild_id: int | None) -> int | None:
        """The server whose decks count: this one, else the one the learner used last."""
        if guild_id is not None:
            return guild_id
        return self.store.servers.last_guild(learner_id)

    def decks(self, learner_id: int, guild_id: int | None) -> list[str]:
        """The deck ids this learner plays here, in the server's order."""
        return self.server_decks(self.home(learner_id, guild_id))

    def server_decks(self, guild_id: int | None) -> list[str]:
        """The deck ids a server plays (None: no server, the bundled decks)."""
        if guild_id is None:
            self.server.live.refresh()
            return list(self.server.default())
        return self.server.enabled(guild_id)

    def cards(self, learner_id: int, guild_id: int | None,
              topic: str | None = None) -> list[AnyCard]:
        """The cards this learner can be served here (code cards only with a sandbox)."""
        return self.tutor.servable(topic=topic, decks=self.decks(learner_id, guild_id))

    def card_ids(self, learner_id: int, guild_id: int | None) -> frozenset[str]:
        """The ids of `cards`, remembered per deck list while the library stays the same."""
        decks = tuple(self.decks(learner_id, guild_id))
        library, known = self._ids
        if library is not self.tutor.library:
            library, known = self.tutor.library, {}
            self._ids = (library, known)
        if decks not in known:
            known[decks] = frozenset(c.id for c in self.tutor.servable(decks=decks))
        return known[decks]

    def topics(self, learner_id: int, guild_id: int | None) -> list[str]:
        """The topics of the cards this learner can be served here (/practice)."""
        return sorted({t for card in self.cards(learner_id, guild_id) for t in card.topics})

    def next_card(self, learner: Learner, guild_id: int | None, **options) -> Served | None:
        """`Tutor.next_card` over the decks this learner plays here."""
        return self.tutor.next_card(learner, guild_id=guild_id,
                                    decks=self.decks(learner.id, guild_id), **options)

    def progress(self, learner: Learner, guild_id: int | None) -> Progress:
        """`Tutor.progress` over the same cards `next_card` serves from."""
        return self.tutor.progress(learner, guild_id=guild_id,
                                   decks=self.decks(learner.id, guild_id))

    def forecast(self, learner: Learner, guild_id: int | None,
                 days: int = 14) -> list[tuple[date, int]]:
        """Cards due on each of the next `days` study days, today first, over the cards
        `progress` counts and by the due days of the scheduler in force there: today's
        count holds the overdue ones too, so it is `Progress.due_now`."""
        self.tutor.decks.refresh()
        today = self.tutor.today(learner)
        due_of, _ = DUE_KEYS[self.tutor.choice(learner, guild_id).scheduler]
        cards = {card.id for card in self.cards(learner.id, guild_id)}
        counts = [0] * max(days, 0)
        for state in self.store.reviews.states(learner.id):
            if state.card_id in cards:
                ahead = max((due_of(state) - today).days, 0)
                if ahead < len(counts):
                    counts[ahead] += 1
        return [(today + timedelta(days=ahead), n) for ahead, n in enumerate(counts)]
