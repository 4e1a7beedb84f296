"""The offline Discord's OAuth2: a web front end's "Log in with Discord", the authorization code
flow of https://discord.com/developers/docs/topics/oauth2, on the server's own port.

Faked: applications (client id, secret, redirect URIs: `register_app`); the browser's Discord
session (GET /offline/login-as/{user_id}?next=... sets the cookie `offline_discord_user`, GET
/offline/logout drops it); the consent page (GET /oauth2/authorize: a small HTML form whose
Authorize / Cancel POST back to /oauth2/authorize and redirect to `redirect_uri` with `code` or
`error=access_denied`, and `state`); POST /api/v10/oauth2/token (grant types authorization_code
and refresh_token, the client's credentials in the form or by HTTP Basic); and, with `Authorization:
Bearer <token>`, GET /api/v10/users/@me (scope identify) and /users/@me/guilds (scope guilds,
each guild's `permissions` resolved from the member's roles, bot/bench/offline_discord/world.py).

Checked as Discord does: an unknown client_id or a redirect_uri not registered (exactly) is a 400
page and no redirect; response_type other than code, or scopes other than identify and guilds,
redirect with `error`; codes are single use (reusing one also revokes what it bought), bound to
the client and redirect_uri, and live CODE_TTL seconds; access tokens TOKEN_TTL (`clock`:
monotonic seconds, replaceable by a test). A Bearer token reaches only those two routes (401
elsewhere); a Bot token keeps the bot's view of /users/@me and never a user's.

Not faked: Discord's own login (the cookie stands for it), remembering a past consent:
`prompt=none` with a logged-in browser approves at once, whatever was granted before; other
scopes (email, bot, applications.commands...), the implicit and client-credentials grants,
PKCE, token revocation, guild pagination (before/after/limit), rate limits.
"""

from __future__ import annotations

import base64
import binascii
import html
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from yarl import URL

SCOPES = ("identify", "guilds")
CODE_TTL, TOKEN_TTL = 600, 604800  # seconds: Discord's 10 minutes and 7 days
COOKIE = "offline_discord_user"
UNAUTHORIZED = {"message": "401: Unauthorized", "code": 0}
MISSING_ACCESS = {"message": "Missing Access", "code": 50001}


@dataclass
class Grant:
    """What a user approved for a client: behind a code, an access or a refresh token."""

    client_id: str
    user_id: str
    scopes: tuple[str, ...]
    redirect_uri: str
    expires: float
    issued: tuple[str, str] | None = None  # a code's: the access and refresh tokens it bought


class _Refused(Exception):
    """Answer the browser with this response (an error page or an error redirect)."""

    def __init__(self, response: web.Response):
        self.response = response


def _page(status: int, title: str, body: str = "") -> web.Response:
    text = (f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
            f"<body><h1>{html.escape(title)}</h1>{body}</body></html>")
    return web.Response(status=status, text=text, content_type="text/html")


def _found(location: str | URL) -> web.Response:
    return web.Response(status=302, headers={"Location": str(location)})


def _json(status: int, payload: Any, **headers: str) -> web.Response:
    return web.json_response(payload, status=status, headers=headers)


class OAuth2:
    """The OAuth2 side of the offline Discord. `world` holds the users and guilds (a World);
    `base()` is the server's address, for the URLs it builds."""

    def __init__(self, world: Any, base: Callable[[], str],
                 clock: Callable[[], float] = time.monotonic):
        self.world, self._base, self.clock = world, base, clock
        self.apps: dict[str, dict] = {}  # client_id -> {client_id, client_secret, redirect_uris}
        self.codes: dict[str, Grant] = {}
        self.tokens: dict[str, Grant] = {}  # access token -> grant
        self.refresh_tokens: dict[str, Grant] = {}

    # ---- what a test calls -------------------------------------------------------------------

    def register_app(self, *, client_id: str | None = None, client_secret: str | None = None,
                     redirect_uris=(), name: str = "Tutor Web") -> dict:
        """An OAuth2 application (Developer Portal > OAuth2); ids and secret made if not given."""
        app = {"client_id": client_id or self.world.snowflake(), "name": name,
               "client_secret": client_secret or secrets.token_urlsafe(24),
               "redirect_uris": list(redirect_uris)}
        self.apps[app["client_id"]] = app
        return app

    def login_url(self, user: dict, next: str = "/") -> str:  # noqa: A002 (the query's name)
        """Open this in a browser (a cookie-keeping client) to be logged in to Discord as `user`."""
        return str(URL(f"{self._base()}/offline/login-as/{user['id']}").with_query(next=next))

    def authorize_url(self, client_id: str, redirect_uri: str, state: str,
                      scope: str = "identify guilds", **extra: str) -> str:
        return str(URL(f"{self._base()}/oauth2/authorize").with_query(
            response_type="code", client_id=client_id, scope=scope, state=state,
            redirect_uri=redirect_uri, **extra))

    def mount(self, app: web.Application, rest: Callable[[web.Request], Awaitable[web.Response]]
              ) -> None:
        """Add the routes; every other /api/v10 request goes to `rest` (the bot's API)."""
        app.router.add_get("/offline/login-as/{user_id}", self._login_as)
        app.router.add_get("/offline/logout", self._logout)
        app.router.add_route("GET", "/oauth2/authorize", self._authorize)
        app.router.add_route("POST", "/oauth2/authorize", self._authorize)

        async def api(request: web.Request) -> web.Response:
            tail = request.match_info["tail"]
            if tail == "oauth2/token":
                return await self._token(request)
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() == "bearer":
                return self._bearer(tail, request.method, token.strip())
            return await rest(request)

        app.router.add_route("*", "/api/v10/{tail:.*}", api)

    # ---- the browser -------------------------------------------------------------------------

    async def _login_as(self, request: web.Request) -> web.Response:
        uid = request.match_info["user_id"]
        if uid not in self.world.users:
            return _page(404, "Unknown user", f"<p>No user {html.escape(uid)}.</p>")
        response = _found(request.query.get("next", "/"))
        response.set_cookie(COOKIE, uid, path="/", httponly=True, samesite="Lax")
        return response

    async def _logout(self, request: web.Request) -> web.Response:
        response = _found(request.query.get("next", "/"))
        response.del_cookie(COOKIE, path="/")
        return response

    def _check(self, params) -> tuple[dict, str, tuple[str, ...]]:
        """The app, redirect_uri and scopes of an authorize request, or _Refused."""
        app = self.apps.get(params.get("client_id", ""))
        if app is None:
            raise _Refused(_page(400, "Unknown application",
                                 "<p>Invalid OAuth2 client_id.</p>"))
        redirect_uri = params.get("redirect_uri", "")
        if redirect_uri not in app["redirect_uris"]:  # Discord shows an error; no redirect
            raise _Refused(_page(400, "Invalid OAuth2 redirect_uri",
                                 "<p>This redirect_uri is not registered for the app.</p>"))
        state = params.get("state")
        if params.get("response_type") != "code":
            raise _Refused(self._redirect(redirect_uri, state, error="unsupported_response_type"))
        scopes = tuple(params.get("scope", "").replace("+", " ").split())
        if not scopes or any(s not in SCOPES for s in scopes):
            raise _Refused(self._redirect(redirect_uri, state, error="invalid_scope",
                                          error_description="The requested scope is invalid, "
                                          "unknown, or malformed."))
        return app, redirect_uri, scopes

    @staticmethod
    def _redirect(redirect_uri: str, state: str | None, **query: str) -> web.Response:
        return _found(URL(redirect_uri).update_query(
            {**query, **({"state": state} if state is not None else {})}))

    async def _authorize(self, request: web.Request) -> web.Response:
        params = await request.post() if request.method == "POST" else request.query
        try:
            app, redirect_uri, scopes = self._check(params)
        except _Refused as refused:
            return refused.response
        user = self.world.users.get(request.cookies.get(COOKIE, ""))
        if user is None:
            return _page(401, "Log in first", "<p>Log in to Discord to authorize "
                         f"{html.escape(app['name'])}: /offline/login-as/&lt;user id&gt;.</p>")
        state = params.get("state")
        approved = params.get("decision") == "authorize" if request.method == "POST" else (
            params.get("prompt") == "none")  # offline, prompt=none skips consent outright
        if request.method == "GET" and not approved:
            return self._consent(app, user, scopes, params)
        if not approved:
            return self._redirect(redirect_uri, state, error="access_denied",
                                  error_description="The resource owner or authorization "
                                  "server denied the request")
        code = secrets.token_urlsafe(22)
        self.codes[code] = Grant(app["client_id"], user["id"], scopes, redirect_uri,
                                 self.clock() + CODE_TTL)
        return self._redirect(redirect_uri, state, code=code)

    @staticmethod
    def _consent(app: dict, user: dict, scopes: tuple[str, ...], params) -> web.Response:
        what = {"identify": "Access your username, avatar, and banner",
                "guilds": "Know what servers you're in"}
        hidden = "".join(f'<input type="hidden" name="{k}" value="{html.escape(params[k])}">'
                         for k in ("response_type", "client_id", "scope", "state",
                                   "redirect_uri") if k in params)
        items = "".join(f"<li>{html.escape(what[s])} ({s})</li>" for s in scopes)
        name = html.escape(user.get("global_name") or user["username"])
        return _page(200, f"{app['name']} wants to access your account",
                     f"<p>Signed in as {name}.</p><ul>{items}</ul>"
                     f'<form method="post" action="/oauth2/authorize">{hidden}'
                     '<button name="decision" value="cancel">Cancel</button>'
                     '<button name="decision" value="authorize">Authorize</button></form>')

    # ---- the token endpoint ------------------------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        if request.method != "POST":
            return _json(405, {"message": "405: Method Not Allowed", "code": 0})
        if request.content_type != "application/x-www-form-urlencoded":
            return _json(400, {"error": "invalid_request",
                               "error_description": "Body must be form-urlencoded"})
        form = await request.post()
        client_id, secret = form.get("client_id"), form.get("client_secret")
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "basic":
            try:
                client_id, _, secret = base64.b64decode(credentials).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                client_id = secret = None
        app = self.apps.get(client_id or "")
        if app is None or not secrets.compare_digest(str(secret or ""), app["client_secret"]):
            return _json(401, {"error": "invalid_client"})
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self._redeem(form.get("code", ""), app, form.get("redirect_uri"))
        elif grant_type == "refresh_token":
            grant = self.refresh_tokens.get(form.get("refresh_token", ""))
            if grant is None or grant.client_id != app["client_id"]:
                grant = None
            else:  # the old pair is spent
                self._revoke(grant.issued)
        else:
            return _json(400, {"error": "unsupported_grant_type"})
        if grant is None:
            return _json(400, {"error": "invalid_grant"})
        return _json(200, self._issue(grant), **{"Cache-Control": "no-store"})

    def _redeem(self, code: str, app: dict, redirect_uri: str | None) -> Grant | None:
        """The code's grant, once; a code presented again revokes the token it bought."""
        grant = self.codes.get(code)
        if grant is None:
            return None
        if grant.issued is not None:  # reused: RFC 6749 4.1.2
            self._revoke(grant.issued)
            return None
        if (grant.client_id != app["client_id"] or grant.redirect_uri != redirect_uri
                or self.clock() > grant.expires):
            del self.codes[code]
            return None
        return grant

    def _revoke(self, issued: tuple[str, str] | None) -> None:
        access, refresh = issued or ("", "")
        self.tokens.pop(access, None)
        self.refresh_tokens.pop(refresh, None)

    def _issue(self, source: Grant) -> dict:
        grant = Grant(source.client_id, source.user_id, source.scopes, source.redirect_uri,
                      self.clock() + TOKEN_TTL)
        access, refresh = secrets.token_urlsafe(22), secrets.token_urlsafe(22)
        source.issued = grant.issued = (access, refresh)
        self.tokens[access] = self.refresh_tokens[refresh] = grant
        return {"access_token": access, "token_type": "Bearer", "expires_in": TOKEN_TTL,
                "refresh_token": refresh, "scope": " ".join(grant.scopes)}

    # ---- the API with a user's token ---------------------------------------------------------

    def _bearer(self, tail: str, method: str, token: str) -> web.Response:
        grant = self.tokens.get(token)
        if grant is None or self.clock() > grant.expires or grant.user_id not in self.world.users:
            return _json(401, UNAUTHORIZED)
        if method == "GET" and tail == "users/@me":
            if "identify" not in grant.scopes:
                return _json(401, UNAUTHORIZED)
            user = self.world.users[grant.user_id]
            keys = ("id", "username", "global_name", "avatar", "discriminator", "public_flags",
                    "flags")
            return _json(200, {**{k: user[k] for k in keys}, "banner": None,
                               "accent_color": None, "locale": "en-US", "mfa_enabled": False,
                               "premium_type": 0})
        if method == "GET" and tail == "users/@me/guilds":
            if "guilds" not in grant.scopes:
                return _json(403, MISSING_ACCESS)
            return _json(200, self.world.user_guilds(grant.user_id))
        return _json(401, UNAUTHORIZED)  # the bot's API does not take a user's token
