"""How much of the sandbox a server's deck uploads may take (issue 37).

An upload with behaviour cards is tried in the sandbox before it is stored: up to 24
exercises, three runs each. Anyone who adds the bot to a server of their own is an admin
there, so uploads are held per server: one tried at a time, a few an hour, and a few
servers' at once in this process (the threads that try them; never a learner's). A
server's interactions all come to the one process that holds its shard, so the counts
here are the server's. In the sandbox each run of a trial is a lower class than learners'
answers (`bot.sandbox.service.admission`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator

from bot.engine.errors import TutorError

TRIALS_PER_HOUR = 6  # a server's uploads with exercises, tried or not
TRIALS_AT_ONCE = 2  # servers' trials at once in this process: the trial threads
HOUR_S = 3600.0


class TrialRefused(TutorError):
    """The upload is not tried now; the message says when it can be."""


class TrialGate:
    def __init__(self, per_hour: int = TRIALS_PER_HOUR, at_once: int = TRIALS_AT_ONCE,
                 clock: Callable[[], float] = time.monotonic):
        self.per_hour, self.at_once, self.clock = per_hour, at_once, clock
        self._lock = threading.Lock()  # uploads come from the loop and from threads
        self._trying: set[int] = set()
        self._recent: dict[int, deque[float]] = defaultdict(deque)

    @contextlib.contextmanager
    def held(self, server: int) -> Iterator[None]:
        """The server's one trial, from now to its end; TrialRefused when it may not start."""
        with self._lock:
            self._admit(server)
            self._trying.add(server)
            self._recent[server].append(self.clock())
        try:
            yield
        finally:
            with self._lock:
                self._trying.discard(server)

    def _admit(self, server: int) -> None:
        if server in self._trying:
            raise TrialRefused("This server's previous upload is still being tried in the "
                               "sandbox; upload again once it has its answer.")
        now, recent = self.clock(), self._recent[server]
        while recent and now - recent[0] >= HOUR_S:
            recent.popleft()
        if not recent:
            del self._recent[server]  # a server seen once holds nothing for ever
        if len(recent) >= self.per_hour:
            minutes = max(1, round((HOUR_S - (now - recent[0])) / 60))
            raise TrialRefused(f"This server has had {self.per_hour} decks with behaviour "
                               "cards tried in the sandbox this hour; upload again in "
                               f"{minutes} minute(s).")
        if len(self._trying) >= self.at_once:
            raise TrialRefused("Other servers' decks are being tried in the sandbox right "
                               "now; upload again in a few minutes.")
