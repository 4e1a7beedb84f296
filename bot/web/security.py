"""What every response and every state-changing request goes through: security headers
(a Content-Security-Policy without inline script), the session's CSRF token on each POST,
and rate limits on the costly actions (checking and trying decks)."""

from __future__ import annotations

import hmac
import time
from collections import defaultdict, deque
from collections.abc import Callable

from aiohttp import web

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def headers_middleware():
    @web.middleware
    async def secure_headers(request: web.Request, handler):
        try:
            response = await handler(request)
        except web.HTTPException as error:
            error.headers.update(HEADERS)
            raise
        response.headers.update(HEADERS)
        return response
    return secure_headers


def csrf_ok(request: web.Request, expected: str, form) -> bool:
    """A POST carries the session's token, and comes from this site when the browser says
    where it comes from."""
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        return False
    sent = form.get("csrf", "") if form is not None else ""
    return bool(expected) and isinstance(sent, str) and hmac.compare_digest(sent, expected)


class RateLimits:
    """At most `count` of an action per `per` seconds for one visitor (in this process)."""

    def __init__(self, rules: dict[str, tuple[int, float]] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.rules = rules or {"check": (30, 60.0), "trial": (3, 60.0), "publish": (10, 60.0)}
        self._clock, self._seen = clock, defaultdict(deque)

    def allow(self, action: str, who: str) -> bool:
        count, per = self.rules[action]
        now, seen = self._clock(), self._seen[action, who]
        while seen and seen[0] <= now - per:
            seen.popleft()
        if len(seen) >= count:
            return False
        seen.append(now)
        return True

    def wait(self, action: str, who: str) -> int:
        """Seconds until the next one is allowed."""
        _, per = self.rules[action]
        seen = self._seen[action, who]
        return max(1, int(seen[0] + per - self._clock()) + 1) if seen else 0
