"""Whether the fleet's Redis answers us, as a bot process or a sandbox host sees it.

An operator hears one line when Redis goes away or refuses our user, one a minute while
that lasts, and one when it answers again; every line says what to check, never a
password. `problem` words any failure reaching Redis in one line (the CLI prints it too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    NoPermissionError,
    RedisError,
)

from bot.sandbox.broker import BOT_USER, HOST_USER

REPEAT_S = 60.0  # while Redis stays away, the line again at most this often
# Where each of the fleet's users gets its password (README: Deploying).
PASSWORD_OF = {BOT_USER: "REDIS_BOT_PASSWORD (in SANDBOX_ADDRESS)",
               HOST_USER: "REDIS_SANDBOX_PASSWORD (in SANDBOX_BROKER)"}


def problem(exc: BaseException, user: str | None) -> str:
    """What went wrong reaching Redis as `user`, in one line for an operator."""
    who = f"user {user}" if user else "the default user"
    first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    if isinstance(exc, AuthenticationError):  # WRONGPASS, NOAUTH (a ConnectionError too)
        where = PASSWORD_OF.get(user, "its password")
        return (f"Redis refused {who} ({first}): check {where} and Redis's ACL file "
                "(`tutor sandbox acl` writes it; restart Redis to load it)")
    if isinstance(exc, NoPermissionError):
        return (f"Redis denied {who} a command ({first}): its ACL file is out of date; "
                "write it anew with `tutor sandbox acl` and restart Redis")
    if isinstance(exc, BusyLoadingError):
        return "Redis is loading its data; it answers once that is done"
    if isinstance(exc, RedisError | OSError):
        return f"cannot reach Redis ({type(exc).__name__}: {first})"
    return f"Redis failed: {type(exc).__name__}: {first}"


class BrokerLink:
    """Up or down, with the problem and since when; logs only the changes (and a reminder
    a minute while down)."""

    def __init__(self, what: str, user: str | None, log: logging.Logger,
                 clock: Callable[[], float] = time.monotonic):
        self.what, self.user, self.log, self.clock = what, user, log, clock
        self.up = True  # until a failure says otherwise: nothing was tried yet
        self.problem: str | None = None
        self._since = self._said = clock()

    def ok(self) -> None:
        if not self.up:
            self.log.warning("%s: Redis answers again (after %.0f s)", self.what,
                             self.clock() - self._since)
            self.up, self.problem = True, None
            self._since = self.clock()

    def failed(self, exc: BaseException) -> str:
        """Record a failure; its one-line problem."""
        now, said = self.clock(), problem(exc, self.user)
        if self.up or _kind(said) != _kind(self.problem):  # not each new errno: a new kind
            if self.up:
                self._since = now
            self.log.error("%s: %s", self.what, said)
            self._said = now
        elif now - self._said >= REPEAT_S:
            self.log.error("%s: still failing for %.0f s: %s", self.what, now - self._since,
                           said)
            self._said = now
        self.up, self.problem = False, said
        return said



def _kind(said: str | None) -> str | None:
    """A problem's kind: its words before the detail in brackets."""
    return None if said is None else said.split(" (", 1)[0]
