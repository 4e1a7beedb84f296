"""The web companion in tests: a site on an engine, a client on it, and a visitor logged in
as the login's callback would (`log_in`)."""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from bot.web.app import make_app
from bot.web.oauth import OAuthApp
from bot.web.sessions import COOKIE, Sessions
from bot.web.site import SITE, Site

SECRET = b"s" * 32
OAUTH = OAuthApp("app-1", "app-secret", "http://127.0.0.1/oauth/callback",
                 "http://127.0.0.1:1/oauth2/authorize", "http://127.0.0.1:1/api/v10")


def make_site(engine, oauth=OAUTH, **options) -> Site:
    return Site(engine, Sessions(SECRET, secure=False), oauth, **options)


async def client_for(site: Site) -> TestClient:
    client = TestClient(TestServer(make_app(site)))
    await client.start_server()
    return client


def log_in(client: TestClient, user_id: int, name: str = "Ada",
           guilds: dict[int, tuple[str, bool]] | None = None, csrf: str = "token-1") -> str:
    """The session the callback writes for this Discord user and their servers; the CSRF
    token to post with."""
    sessions = client.server.app[SITE].sessions
    client.session.cookie_jar.update_cookies({COOKIE: sessions.encode({"csrf": csrf, "user": {
        "id": str(user_id), "name": name,
        "guilds": {str(g): list(v) for g, v in (guilds or {}).items()}}})})
    return csrf
