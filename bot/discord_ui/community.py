"""Leaderboards, insights and the picture side of /stats.

The board and the insights are a server's: from a DM (a forged client; Discord's own
offers them in servers only) they say so and show nothing, since a DM has no server to
scope them to (the insights' queries would cover every server)."""

from __future__ import annotations

import asyncio
import io

import discord
from discord import app_commands

from bot.discord_ui import charts, refusals, render
from bot.discord_ui.admin import in_server
from bot.discord_ui.components import handled
from bot.discord_ui.handlers import CardHandlers
from bot.discord_ui.replies import reply
from bot.engine import (
    DISCORD,
    Board,
    LearnerMistake,
    Standing,
    TutorError,
    card_label,
    counted,
    current_streak,
)
from content.safe_text import clip, literal, plain

PER_PAGE = 10
INSIGHT_DAYS = 30
STATS_BUTTONS = 3  # /stats offers practice on your first open mistakes
ABOUT_THE_BOARD = "the board ranks that server's learners"


class BoardButton(discord.ui.DynamicItem[discord.ui.Button],
                  template=r"srs:lb:(?P<period>week|season):(?P<page>\d{1,5}):(?P<way>prev|next)"):
    """Prev/Next on a board; `way` keeps the two ids distinct when they lead to one page."""

    LABELS = {"prev": "◀ Prev", "next": "Next ▶"}

    def __init__(self, period: str, page: int, way: str, disabled: bool = False):
        super().__init__(discord.ui.Button(label=self.LABELS[way], disabled=disabled,
                                           style=discord.ButtonStyle.secondary,
                                           custom_id=f"srs:lb:{period}:{page}:{way}"))
        self.period, self.page = period, page

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["period"], int(match["page"]), match["way"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.community.on_board_page(
            interaction, self.period, self.page))


class ReviewCardButton(discord.ui.DynamicItem[discord.ui.Button],  # on older /stats
                       template=r"srs:card:(?P<card>[a-z][a-z0-9-]*/[a-z][a-z0-9-]*)"):
    """From /stats: practise one of the cards you miss most."""

    def __init__(self, card_id: str, label: str = ""):
        # Named by its prompt; the id is only the value behind it (a rebuilt button after
        # a restart needs no label: discord.py routes the click by custom_id).
        super().__init__(discord.ui.Button(label=f"Review: {label}"[:DISCORD.button_label]
                                           if label else "Review",
                                           custom_id=f"srs:card:{card_id}"[:DISCORD.custom_id]))
        self.card_id = card_id

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["card"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.community.on_review_card(
            interaction, self.card_id))


class MistakeButton(discord.ui.DynamicItem[discord.ui.Button],
                    template=r"srs:mis:(?P<deck>[a-z][a-z0-9_-]{0,39}):"
                             r"(?P<mistake>[a-z][a-z0-9_-]{0,39})"):
    """From /stats: practise a card on one of your open mistakes, named by the mistake."""

    def __init__(self, deck_id: str, mistake_id: str, title: str = ""):
        label = f"Practise: {' '.join(plain(title).split())}" if title else "Practise"
        super().__init__(discord.ui.Button(
            label=clip(label, DISCORD.button_label),
            custom_id=f"srs:mis:{deck_id}:{mistake_id}"[:DISCORD.custom_id]))
        self.deck_id, self.mistake_id = deck_id, mistake_id

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["deck"], match["mistake"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.community.on_practise_mistake(
            interaction, self.deck_id, self.mistake_id))


def board_title(guild_name: str, period: str, season: int) -> str:
    return f"{guild_name} · this week" if period == "week" else f"{guild_name} · season {season}"


def board_embed(guild_name: str, period: str, season: int, result: Board) -> discord.Embed:
    title = board_title(literal(guild_name), period, season)
    lines = [_line(s) for s in result.standings] or ["No reviews in this server yet."]
    caller = result.caller
    if caller and caller not in result.standings:
        lines += ["…", _line(caller) + "  ← you"]
    embed = discord.Embed(title=title, description="\n".join(lines), colour=render.BLUE)
    embed.set_footer(text=f"Page {result.page}/{result.pages} · "
                          f"{counted(result.total, 'learner')} · "
                          "due reviews right first try count most")
    return embed


def _line(s: Standing) -> str:
    accuracy = "–" if s.accuracy is None else f"{s.accuracy:.0%}"
    return (f"`#{s.rank:>2}` **{literal(s.name)}** — {s.points} pts · "
            f"streak {s.streak} · {accuracy} first try")


def board_view(period: str, result: Board) -> discord.ui.View | None:
    if result.pages <= 1:
        return None  # one page: nothing to turn
    view = discord.ui.View(timeout=None)
    view.add_item(BoardButton(period, max(1, result.page - 1), "prev", result.page <= 1))
    view.add_item(BoardButton(period, min(result.pages, result.page + 1), "next",
                              result.page >= result.pages))
    return view


class Community:
    """The handlers behind /leaderboard, /insights, the board buttons and /stats extras."""

    def __init__(self, handlers: CardHandlers, web_url: str | None = None):
        """`web_url`: where the web companion is served (`tutor web`), for links to it."""
        self.handlers, self.tutor = handlers, handlers.tutor
        self.boards = handlers.engine.boards
        self.web_url = web_url.rstrip("/") if web_url else None

    async def _board(self, interaction, period: str, page: int):
        return await self.handlers.db(self.boards.board, interaction.guild_id, period, page,
                                      await self.handlers.learner(interaction.user), PER_PAGE)

    async def leaderboard(self, interaction, period: str, page: int, image: bool) -> None:
        if not await in_server(interaction, ABOUT_THE_BOARD):
            return
        try:
            settings, result = await self._board(interaction, period, page)
        except TutorError as exc:
            await reply(interaction, refusals.words(exc))
            return
        embed = board_embed(interaction.guild.name, period, settings.season, result)
        files = []
        if image:
            rows = [(s.rank, s.name, s.points, s.streak, s.accuracy) for s in result.standings]
            highlight = result.caller.rank if result.caller else None
            # Unescaped: the chart draws text, and cleans it itself (charts._clean).
            title = board_title(interaction.guild.name, period, settings.season)
            png = await asyncio.to_thread(charts.leaderboard_png, title, rows, highlight)
            files = [discord.File(io.BytesIO(png), "leaderboard.png")]
            embed.set_image(url="attachment://leaderboard.png")
        view = self._with_web_link(board_view(period, result), interaction.guild_id, period)
        await interaction.response.send_message(embed=embed, files=files,
                                                **({"view": view} if view else {}))

    def _with_web_link(self, view: discord.ui.View | None, guild_id: int,
                       period: str) -> discord.ui.View | None:
        """The board's web page (public, or behind Discord's login), where one is served."""
        if not self.web_url:
            return view
        view = view or discord.ui.View(timeout=None)
        view.add_item(discord.ui.Button(
            label="On the web", style=discord.ButtonStyle.link,
            url=f"{self.web_url}/servers/{guild_id}/leaderboard?period={period}"))
        return view

    async def on_board_page(self, interaction, period: str, page: int) -> None:
        if not await in_server(interaction, ABOUT_THE_BOARD):
            return
        try:
            settings, result = await self._board(interaction, period, page)
        except TutorError as exc:
            await reply(interaction, refusals.words(exc))
            return
        await interaction.response.edit_message(
            embed=board_embed(interaction.guild.name, period, settings.season, result),
            view=self._with_web_link(board_view(period, result), interaction.guild_id, period),
            attachments=[])

    async def insights(self, interaction) -> None:
        if not await in_server(interaction, "it shows what that server's learners get wrong"):
            return
        found = await self.handlers.db(self.boards.server_insights, interaction.guild_id,
                                       INSIGHT_DAYS)
        embed = discord.Embed(title=f"What this server gets wrong (last {INSIGHT_DAYS} days)",
                              colour=render.BLUE)
        embed.add_field(name="Cards missed most", inline=False, value="\n".join(
            f"**{literal(self._label(card))}** missed {missed} of {total}"
            for card, missed, total in found.missed_cards) or "Nothing missed yet.")
        embed.add_field(name="Mistakes made most", inline=False, value="\n".join(
            f"**{literal(title)}** × {n}" for title, n in found.mistakes) or "None yet.")
        await interaction.response.send_message(embed=embed, ephemeral=True)

    async def stats_extras(self, learner, today, open_mistakes: list[LearnerMistake],
                           guild_id: int | None = None,
                           ) -> tuple[list[discord.File], discord.ui.View | None]:
        """The /stats picture (rendered off the event loop), and a button for each of your
        first open mistakes in the decks you play here, named by the mistake."""
        activity = await self.handlers.db(self.boards.activity, learner, days=182, top=3,
                                          guild_id=guild_id)
        png = await asyncio.to_thread(
            charts.stats_png, learner.display_name or "Your", activity.daily, today,
            activity.retention, current_streak(learner, today), learner.longest_streak)
        view = None
        if open_mistakes:
            view = discord.ui.View(timeout=None)
            for m in open_mistakes[:STATS_BUTTONS]:
                view.add_item(MistakeButton(m.deck_id, m.mistake_id, m.title))
        return [discord.File(io.BytesIO(png), "stats.png")], view

    async def on_practise_mistake(self, interaction, deck_id: str, mistake_id: str) -> None:
        learner = await self.handlers.learner(interaction.user)
        missed = await self.handlers.db(self.boards.activity, learner, days=182, top=3,
                                        guild_id=interaction.guild_id)
        card_id = await self.handlers.db(
            self.handlers.learners.card_for_mistake, deck_id, mistake_id,
            [card for card, _, _ in missed.insights.missed_cards])
        if card_id is None:
            await reply(interaction, "No card tests that mistake any more.")
            return
        await self.handlers.serve(interaction, "practice", card_id=card_id)

    def _label(self, card_id: str) -> str:
        """A card as learners know it: its prompt's first line (a card since removed from
        its deck: the last part of its id)."""
        library = self.tutor.library
        return card_label(library.card(card_id).prompt) if library.has_card(card_id) \
            else card_id.rsplit("/", 1)[-1]

    async def on_review_card(self, interaction, card_id: str) -> None:
        if not self.tutor.library.has_card(card_id):
            await reply(interaction, "That card is no longer in the deck.")
            return
        await self.handlers.serve(interaction, "practice", card_id=card_id)


def build_community_commands(community: Community) -> list[app_commands.Command]:
    @app_commands.command(name="leaderboard", description="This server's learners, ranked.")
    @app_commands.guild_only()
    @app_commands.describe(period="This week, or the whole season", page="Page number",
                           image="Attach the board as a picture")
    @app_commands.choices(period=[app_commands.Choice(name="this week", value="week"),
                                  app_commands.Choice(name="this season", value="season")])
    async def leaderboard(interaction: discord.Interaction, period: str = "week",
                          page: app_commands.Range[int, 1, 10000] = 1,
                          image: bool = False) -> None:
        await community.leaderboard(interaction, period, page, image)

    @app_commands.command(name="insights",
                          description="Which cards and mistakes this server gets wrong most.")
    @app_commands.guild_only()
    async def insights(interaction: discord.Interaction) -> None:
        await community.insights(interaction)

    return [leaderboard, insights]
