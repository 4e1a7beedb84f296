"""A learner's own progress, per server (issue 42: counted from their reviews there), with
charts drawn here (bot/web/charts.py). Only the visitor's own: the learner is theirs, and
a server they are not in is 'not found'."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bot.engine import SCHEDULERS, Choice, Learner, current_streak
from bot.web import charts
from bot.web.site import Site, Viewer, member, site_of, viewer

WEEKS = 20  # the calendar's span
AHEAD = 14  # the forecast's days


@dataclass(frozen=True)
class Scheduler:
    """The scheduler in force, in words."""

    name: str
    whose: str
    remediation: bool
    fitted: int  # the version of the server's own fitted FSRS parameters; 0: the defaults

    @classmethod
    def of(cls, learner: Learner, choice: Choice, in_server: bool) -> Scheduler:
        place = "this server's choice" if in_server else "the default"
        return cls(SCHEDULERS[choice.scheduler],
                   "your choice" if learner.scheduler else place, choice.remediation,
                   choice.fsrs_version if choice.scheduler == "fsrs" else 0)


def _progress(site: Site, learner: Learner, guild_id: int | None) -> dict:
    """Everything the page shows, read in one worker-thread call."""
    engine = site.engine
    progress = engine.plays.progress(learner, guild_id)
    reviews, first_try = engine.learners.totals(learner, guild_id)
    activity = engine.boards.activity(learner, days=7 * WEEKS + 7, top=0, guild_id=guild_id,
                                      only_here=True)
    mistakes = engine.learners.mistakes(learner, engine.plays.decks(learner.id, guild_id))
    ahead = engine.plays.forecast(learner, guild_id, AHEAD)
    return {
        "progress": progress, "reviews": reviews,
        "first_try": first_try / reviews if reviews else None,
        "streak": current_streak(learner, progress.today),
        "longest": learner.longest_streak,
        "scheduler": Scheduler.of(learner, progress.choice, guild_id is not None),
        "open_mistakes": [m for m in mistakes if m.is_open],
        "corrected": [m for m in mistakes if not m.is_open],
        "calendar": charts.calendar(activity.daily, progress.today, WEEKS),
        "retention": charts.retention(activity.retention),
        "forecast": charts.forecast(ahead),
        "due_ahead": sum(n for _, n in ahead),
        "weeks": WEEKS, "ahead": AHEAD,
    }


async def _page(request: web.Request, who: Viewer, guild_id: int | None,
                place: str) -> web.Response:
    site = site_of(request)
    learner = await site.db(site.engine.tutor.known_learner, who.external_id)
    title = f"My progress · {place}"
    if learner is None:  # looking creates nothing
        return site.page(request, "progress.html", title=title, place=place, learner=None)
    shown = await site.db(_progress, site, learner, guild_id)
    return site.page(request, "progress.html", title=title, place=place, learner=learner,
                     **shown)


async def mine(request: web.Request) -> web.Response:
    who = viewer(request)
    if who.local:  # the terminal's learner: outside any server
        return await _page(request, who, None, "this computer")
    servers = sorted(who.guilds.items(), key=lambda item: item[1][0].casefold())
    if len(servers) == 1:
        raise web.HTTPFound(f"/me/{servers[0][0]}")
    return site_of(request).page(request, "progress_servers.html", title="My progress",
                                 servers=servers)


async def in_server(request: web.Request) -> web.Response:
    who, guild_id = member(request)
    return await _page(request, who, guild_id, who.guilds[guild_id][0])


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/me", mine)
    router.add_get("/me/{guild}", in_server)
