"""What every page of the web front end shares: the engine, the visitor (`Viewer`), who may
see what, templates (escaped by default), and engine calls off the event loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import jinja2
from aiohttp import web

from bot.engine import Board, Engine, Learner
from bot.web.oauth import OAuthApp
from bot.web.rankings import Rankings
from bot.web.security import RateLimits
from bot.web.sessions import COOKIE, Sessions, new_token

SITE = web.AppKey("site", "Site")
VIEWER = web.RequestKey("viewer", "Viewer | None")  # the visitor of this request


@dataclass(frozen=True)
class Viewer:
    """Who is looking: a Discord user (logged in) or the terminal's learner (local mode)."""

    external_id: str  # the learner's id in the engine: discord:<id> or local:<name>
    name: str
    guilds: dict[int, tuple[str, bool]] = field(default_factory=dict)  # name, manages it
    csrf: str = ""
    local: bool = False

    def member_of(self, guild_id: int) -> bool:
        return guild_id in self.guilds

    def manages(self, guild_id: int) -> bool:
        return self.guilds.get(guild_id, ("", False))[1]


@dataclass
class Site:
    engine: Engine
    sessions: Sessions
    oauth: OAuthApp | None  # None: local mode, the terminal's learner on loopback
    local_name: str = "me"
    limits: RateLimits = field(default_factory=RateLimits)
    rankings: Rankings = field(default_factory=Rankings)  # servers' boards, read for all
    templates: jinja2.Environment = field(default_factory=lambda: jinja2.Environment(
        loader=jinja2.PackageLoader("bot.web", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True))

    def viewer_of(self, request: web.Request) -> tuple[Viewer | None, dict | None]:
        """The visitor, and a session to set when it is new (the local visitor's first
        CSRF token)."""
        session = self.sessions.decode(request.cookies.get(COOKIE))
        if self.oauth is None:
            csrf = session.get("csrf")
            fresh = None if csrf else {"csrf": (csrf := new_token())}
            return Viewer(f"local:{self.local_name}", self.local_name, csrf=csrf,
                          local=True), fresh
        user = session.get("user")
        if not isinstance(user, dict):
            return None, None
        guilds = {int(g): (str(name), bool(admin))
                  for g, (name, admin) in user.get("guilds", {}).items()}
        return Viewer(f"discord:{user['id']}", user["name"], guilds,
                      session.get("csrf", "")), None

    async def board(self, guild_id: int, settings, period: str, page: int,
                    caller: Learner | None, per_page: int) -> tuple[Board, float]:
        """One page of a server's board for `period` and `caller`'s standing, and how many
        seconds ago its ranking was read (`Rankings`: one read shown to every visitor for
        a while, as a reload that long ago would have shown it). The ranking is keyed by
        where its period starts (read from the settings of this request), so a new season
        or week shows at once; each visitor's own standing is looked up in it, never kept
        per visitor. TutorError on a bad period or page."""
        engine_boards = self.engine.boards
        since = engine_boards.period_start(settings, period)
        ranking, age_s = await self.rankings.get(
            (guild_id, period, since), lambda: self.db(engine_boards.ranking, guild_id, since))
        return engine_boards.page(ranking, page, caller, per_page), age_s

    async def db(self, call: Callable, *args, **kwargs):
        """An engine call on a worker thread: the loop keeps serving while the database
        answers."""
        return await asyncio.to_thread(functools.partial(call, *args, **kwargs))

    def page(self, request: web.Request, template: str, *, status: int = 200,
             **context) -> web.Response:
        body = self.templates.get_template(template).render(
            viewer=request.get(VIEWER), local=self.oauth is None, **context)
        return web.Response(text=body, status=status, content_type="text/html",
                            charset="utf-8")

    def message(self, request: web.Request, title: str, text: str, *,
                status: int = 200) -> web.Response:
        return self.page(request, "message.html", status=status, title=title, text=text)


def site_of(request: web.Request) -> Site:
    return request.app[SITE]


def viewer(request: web.Request) -> Viewer:
    """The logged-in visitor; a page that needs one sends others to log in."""
    found = request.get(VIEWER)
    if found is None:
        raise web.HTTPFound("/login?next=" + request.path)
    return found


def guild_id_of(request: web.Request) -> int:
    text = request.match_info["guild"]
    if not text.isdigit() or len(text) > 20:
        raise web.HTTPNotFound()
    return int(text)


def member(request: web.Request) -> tuple[Viewer, int]:
    """The visitor and the server in the path, which they belong to: any other server is
    'not found', so a page never tells whether a server uses the bot."""
    who, guild_id = viewer(request), guild_id_of(request)
    if not who.member_of(guild_id):
        raise web.HTTPNotFound()
    return who, guild_id


def admin(request: web.Request) -> tuple[Viewer, int]:
    """The visitor and the server in the path, which they manage (else 'not found')."""
    who, guild_id = member(request)
    if not who.manages(guild_id):
        raise web.HTTPNotFound()
    return who, guild_id
