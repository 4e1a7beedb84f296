"""Logging in with Discord and out again. The `state` is kept in the signed session between
the redirect and the callback, so a callback that this browser did not start is refused."""

from __future__ import annotations

import hmac
import logging

from aiohttp import web

from bot.web.oauth import LoginFailed, authorize_redirect, user_of
from bot.web.sessions import COOKIE, new_token
from bot.web.site import site_of, viewer

log = logging.getLogger(__name__)
MAX_SERVERS = 100  # kept in the cookie: the servers that use the bot, and those they manage


def _local_next(target: str | None) -> str:
    """Where to go after logging in: a path of this site only (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


async def start(request: web.Request) -> web.Response:
    site = site_of(request)
    if site.oauth is None:
        raise web.HTTPFound("/")
    state = new_token()
    response = web.HTTPFound(authorize_redirect(site.oauth, state))
    site.sessions.set_cookie(response, {
        "state": state, "next": _local_next(request.query.get("next"))})
    raise response


async def callback(request: web.Request) -> web.Response:
    site = site_of(request)
    if site.oauth is None:
        raise web.HTTPFound("/")
    session = site.sessions.decode(request.cookies.get(COOKIE))
    state, sent = session.get("state"), request.query.get("state", "")
    if not state or not hmac.compare_digest(str(state), sent):
        return site.message(request, "Login expired", "That login was not started here, or "
                            "took too long. Log in again.", status=400)
    if "error" in request.query:
        return site.message(request, "Not logged in",
                            "Discord did not log you in (you may have cancelled).", status=400)
    try:
        user = await user_of(site.oauth, request.query.get("code", ""))
    except LoginFailed as error:
        log.warning("login failed: %s", error)
        return site.message(request, "Login failed", "Discord did not confirm who you are. "
                            "Log in again.", status=502)
    known = await site.db(site.engine.servers.known, list(user.guilds))
    kept = sorted((g for g, (_, admin) in user.guilds.items() if admin or g in known),
                  key=lambda g: (g not in known, g))[:MAX_SERVERS]
    response = web.HTTPFound(session.get("next", "/"))
    site.sessions.set_cookie(response, {"csrf": new_token(), "user": {
        "id": user.id, "name": user.name,
        "guilds": {str(g): list(user.guilds[g]) for g in kept}}})
    raise response


async def logout(request: web.Request) -> web.Response:
    viewer(request)
    response = web.HTTPFound("/")
    site_of(request).sessions.clear_cookie(response)
    raise response


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/login", start)
    router.add_get("/oauth/callback", callback)
    router.add_post("/logout", logout)
