"""`Engine`: the engine's services, built once from explicit dependencies (the composition
root, `bot/app.py`, builds it) and handed to every front end, which constructs none."""

from __future__ import annotations

from bot.engine.boards import Boards
from bot.engine.community_decks import CommunityDecks
from bot.engine.fits import ServerFits
from bot.engine.learners import Learners
from bot.engine.plays import Plays
from bot.engine.reminders import ReminderSweep, Sender
from bot.engine.served_cards import ServedCards
from bot.engine.server_decks import ServerDecks
from bot.engine.servers import Servers
from bot.engine.trials import TrialGate
from bot.engine.tutor import Tutor
from scheduler.storage.store import Store


class Engine:
    """What the engine offers a front end:

    - `tutor`: cards and answers for a learner kept in memory (the terminal), progress,
      the learner of an external id, today in their calendar;
    - `cards`: served cards kept in the store between clicks (Discord): serve, answer,
      pick, submit, hint, code;
    - `plays`: the decks, cards, topics, progress and cards due ahead (`forecast`) of a
      learner where they play;
    - `learners`: a learner's settings, reminders, mistakes, totals, forgetting;
    - `servers`: a server's settings; `decks`: its uploads, versions, sharing, exports;
    - `boards`: leaderboards and insights; `reminder_sweep`: one sweep of due reminders;
    - `fits`: a server's FSRS parameters fitted to its reviews: the panel, fit, apply, revert.
    """

    def __init__(self, tutor: Tutor, store: Store, *, trials: TrialGate | None = None):
        """`tutor`: the core, on `store` (with its decks, clock and code judge); `trials`:
        how much of the sandbox deck uploads may take (default: `TrialGate()`)."""
        self.tutor, self._store = tutor, store
        server_decks = ServerDecks(tutor.decks, store)
        self.plays = Plays(tutor, store, server_decks)
        self.cards = ServedCards(tutor, store, self.plays)
        self.learners = Learners(tutor, store)
        self.servers = Servers(tutor, store)
        self.decks = CommunityDecks(tutor, store, server_decks, trials)
        self.boards = Boards(tutor, store, self.plays)
        self.fits = ServerFits(store, tutor.clock)

    def reminder_sweep(self, sender: Sender) -> ReminderSweep:
        """A sweep over the store, on the engine's clock, counting only the cards a
        learner's Review now serves: those of the decks of the server they used last."""
        return ReminderSweep(self._store, sender, clock=self.tutor.clock,
                             servable=lambda learner_id: self.plays.card_ids(learner_id, None))

    @property
    def database_waits(self) -> bool:
        """Whether a database call waits on a server (network, commit flush) rather than
        only using CPU (SQLite): front ends with an event loop run such calls elsewhere."""
        return self._store.on_server

    def database_ok(self) -> bool:
        """Whether the store answers (for health checks)."""
        return self._store.ping()
