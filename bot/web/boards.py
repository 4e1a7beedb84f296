"""A server's leaderboards (week, season): public where its admins made them so, else for
its members; learners who hid themselves are never on them."""

from __future__ import annotations

from aiohttp import web

from bot.engine import TutorError
from bot.web.site import VIEWER, admin, guild_id_of, site_of

PER_PAGE = 25
PERIODS = {"week": "This week", "season": "This season"}


async def leaderboard(request: web.Request) -> web.Response:
    site, guild_id, who = site_of(request), guild_id_of(request), request[VIEWER]
    period = request.query.get("period", "week")
    page = request.query.get("page", "1")
    if period not in PERIODS or not page.isdigit() or len(page) > 6:
        raise web.HTTPNotFound()
    settings = await site.db(site.engine.servers.settings, guild_id)
    member = who is not None and who.member_of(guild_id)
    if not (settings.board_public or member):
        raise web.HTTPNotFound()  # a private board: as if the server were unknown here
    caller = await site.db(site.engine.tutor.known_learner, who.external_id) \
        if member else None
    try:
        board, age_s = await site.board(guild_id, settings, period, int(page), caller, PER_PAGE)
    except TutorError:
        raise web.HTTPNotFound() from None
    name = who.guilds[guild_id][0] if member else f"Server {guild_id}"
    return site.page(request, "leaderboard.html", title=f"{name}: leaderboard", name=name,
                     guild_id=guild_id, board=board, period=period, periods=PERIODS,
                     public=settings.board_public, manages=member and who.manages(guild_id),
                     season=settings.season, counted=_ago(age_s))


async def set_public(request: web.Request) -> web.Response:
    site = site_of(request)
    _, guild_id = admin(request)
    public = (await request.post()).get("public") == "on"
    await site.db(site.engine.servers.set_board_public, guild_id, public)
    raise web.HTTPSeeOther(f"/servers/{guild_id}/leaderboard")


def _ago(seconds: float) -> str:
    """When the board was counted, in words (a ranking is shown for a while, `Rankings`)."""
    if seconds < 60:
        return "just now"
    minutes = int(seconds // 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''} ago"


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/servers/{guild}/leaderboard", leaderboard)
    router.add_post("/servers/{guild}/leaderboard/public", set_public)
