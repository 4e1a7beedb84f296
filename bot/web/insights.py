"""What a server's learners get wrong most (its admins'): the cards missed on the first try
and the mistakes made, over the last 30 days, as bar charts drawn on the server."""

from __future__ import annotations

from aiohttp import web

from bot.web.insight_charts import missed_cards_chart, mistakes_chart
from bot.web.site import admin, site_of

DAYS = 30


async def insights(request: web.Request) -> web.Response:
    site = site_of(request)
    who, guild_id = admin(request)
    found = await site.db(site.engine.boards.server_insights, guild_id, days=DAYS)
    labels = await site.db(site.engine.boards.card_labels,
                           [card_id for card_id, _, _ in found.missed_cards])
    name = who.guilds[guild_id][0]
    return site.page(request, "insights.html", title=f"{name}: insights", name=name,
                     guild_id=guild_id, days=DAYS, found=found, labels=labels,
                     cards_chart=missed_cards_chart(found.missed_cards, labels),
                     mistakes_chart=mistakes_chart(found.mistakes))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/servers/{guild}/insights", insights)
