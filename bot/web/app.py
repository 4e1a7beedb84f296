"""The web companion's application: the visitor on every request, CSRF on every POST,
security headers on every response, and the pages (login, progress, leaderboards, decks)."""

from __future__ import annotations

import logging
from pathlib import Path

from aiohttp import web

from bot.engine import MAX_DECK_BYTES
from bot.web import boards, decks, insights, login, progress
from bot.web.security import SAFE_METHODS, csrf_ok, headers_middleware
from bot.web.site import SITE, VIEWER, Site, site_of

log = logging.getLogger(__name__)
MAX_BODY = 1 << 20  # a deck file is at most 256 KiB (bot.engine DISCORD); forms are small


@web.middleware
async def error_pages(request: web.Request, handler):
    """A page for 'not found' and for our own faults (logged), never a traceback."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return site_of(request).message(request, "Not found",
                                        "There is nothing here for you.", status=404)
    except web.HTTPException:
        raise
    except Exception:
        log.exception("web page %s failed", request.path)
        return site_of(request).message(request, "Something went wrong",
                                        "That failed on our side, and it is logged. "
                                        "Try again in a moment.", status=500)


@web.middleware
async def visitor(request: web.Request, handler):
    site = site_of(request)
    who, fresh = site.viewer_of(request)
    request[VIEWER] = who
    if request.method not in SAFE_METHODS:
        try:
            form = await request.post() if request.content_type in (
                "application/x-www-form-urlencoded", "multipart/form-data") else None
        except web.HTTPRequestEntityTooLarge:
            return site.message(request, "Too large",
                                "That was more than this site takes in one form (a deck "
                                f"file is at most {MAX_DECK_BYTES // 1024} KiB): nothing "
                                "was changed.", status=413)
        if who is None or not csrf_ok(request, who.csrf, form):
            return site.message(request, "Expired form",
                                "That form was out of date or not from this site: "
                                "nothing was changed. Reload the page and try again.",
                                status=403)
    response = await handler(request)
    if fresh is not None:
        site.sessions.set_cookie(response, fresh)
    return response


async def home(request: web.Request) -> web.Response:
    site, who = site_of(request), request[VIEWER]
    if who is None:
        return site.page(request, "welcome.html")
    return site.page(request, "home.html", servers=sorted(
        who.guilds.items(), key=lambda item: item[1][0].casefold()))


async def healthz(request: web.Request) -> web.Response:
    ok = await site_of(request).db(site_of(request).engine.database_ok)
    return web.json_response({"ok": ok}, status=200 if ok else 503)


def make_app(site: Site) -> web.Application:
    app = web.Application(middlewares=[headers_middleware(), visitor, error_pages],
                          client_max_size=MAX_BODY)
    app[SITE] = site
    app.router.add_get("/", home)
    app.router.add_get("/healthz", healthz)
    app.router.add_static("/static", Path(__file__).parent / "static", name="static",
                          append_version=True)
    site.templates.globals["static"] = lambda name: str(
        app.router["static"].url_for(filename=name))
    for pages in (login, progress, boards, decks, insights):
        pages.add_routes(app.router)
    return app
