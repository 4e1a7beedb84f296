"""Sessions in a signed cookie: HttpOnly, SameSite=Lax, Secure behind https, and an
expiry inside the signature. The server keeps nothing, so a restart or a second web
process logs no one out; what a session may do is checked against it on every request."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable

COOKIE = "tutor_session"
MAX_AGE = 7 * 24 * 3600  # a week, as Discord's access tokens


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    def __init__(self, secret: bytes, *, secure: bool, clock: Callable[[], float] = time.time,
                 max_age: int = MAX_AGE):
        if len(secret) < 32:
            raise ValueError("the session secret needs at least 32 bytes")
        self._secret, self.secure, self._clock, self.max_age = secret, secure, clock, max_age

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def encode(self, data: dict) -> str:
        body = _b64(json.dumps({**data, "exp": int(self._clock()) + self.max_age},
                               separators=(",", ":")).encode())
        return f"{body}.{self._sign(body)}"

    def decode(self, cookie: str | None) -> dict:
        """The session in this cookie; empty when there is none, or it is forged, broken
        or expired."""
        if not cookie or cookie.count(".") != 1 or len(cookie) > 8192:
            return {}
        body, signature = cookie.split(".")
        if not hmac.compare_digest(signature, self._sign(body)):
            return {}
        try:
            data = json.loads(_unb64(body))
        except ValueError:
            return {}
        if not isinstance(data, dict) or not isinstance(data.get("exp"), int) \
                or data["exp"] < self._clock():
            return {}
        data.pop("exp")
        return data

    def set_cookie(self, response, data: dict) -> None:
        response.set_cookie(COOKIE, self.encode(data), max_age=self.max_age, path="/",
                            httponly=True, samesite="Lax", secure=self.secure)

    @staticmethod
    def clear_cookie(response) -> None:
        response.del_cookie(COOKIE, path="/")


def new_token() -> str:
    """A CSRF token or an OAuth2 `state`: 32 random bytes."""
    return secrets.token_urlsafe(32)
