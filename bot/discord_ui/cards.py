"""Getting cards: /review, /learn, /practice. Answering them is the card handlers (handlers.py)
with its buttons (components.py)."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.discord_ui.handlers import HELP, CardHandlers
from bot.discord_ui.options import learner_command
from bot.discord_ui.replies import reply
from bot.engine import DISCORD, topic_name
from content.safe_text import clip, code_span

PRIVATE_ONLY = ("This server keeps cards private. An admin can allow public play with "
                "**/server-settings public-play**.")


def commands(handlers: CardHandlers) -> list[app_commands.Command]:
    servers = handlers.engine.servers

    async def topics_here(interaction: discord.Interaction) -> list[str]:
        """The topics of the decks this learner plays here (in a DM: their last server's)."""
        learner = await handlers.learner(interaction.user)
        return await handlers.db(handlers.engine.plays.topics, learner.id, interaction.guild_id)

    async def play(interaction: discord.Interaction, mode: str, topic: str | None,
                   public: bool) -> None:
        if public and interaction.guild_id and not (
                await handlers.db(servers.settings, interaction.guild_id)).public_play:
            await reply(interaction, PRIVATE_ONLY)
            return
        await handlers.serve(interaction, mode, topic, ephemeral=not public)

    @learner_command(name="review", description="Review the cards that are due now.")
    @app_commands.describe(public="Show the card to the channel (if the server allows it).")
    async def review(interaction: discord.Interaction, public: bool = False) -> None:
        await play(interaction, "review", None, public)

    @learner_command(name="learn", description="Learn new cards (within your daily limit).")
    @app_commands.describe(public="Show the card to the channel (if the server allows it).")
    async def learn(interaction: discord.Interaction, public: bool = False) -> None:
        await play(interaction, "learn", None, public)

    @learner_command(name="practice",
                     description="Practise a topic now, even if nothing is due.")
    @app_commands.describe(topic="What to practise", public="Show the card to the channel.")
    async def practice(interaction: discord.Interaction, topic: str | None = None,
                       public: bool = False) -> None:
        if topic is not None and topic not in (topics := await topics_here(interaction)):
            await reply(interaction, clip(f"No topic {code_span(topic)} in the decks you play "
                                          f"here. Topics: {', '.join(topics)}.", DISCORD.message))
            return
        await play(interaction, "practice", topic, public)

    @practice.autocomplete("topic")
    async def practice_topics(interaction, current: str) -> list[app_commands.Choice[str]]:
        topics = await topics_here(interaction)
        typed = current.lower()
        return [app_commands.Choice(name=topic_name(t), value=t) for t in topics
                if typed in t or typed in topic_name(t)][:DISCORD.select_options]

    @learner_command(name="help", description="What each command does.")
    async def help_(interaction: discord.Interaction) -> None:
        await reply(interaction, HELP)

    return [review, learn, practice, help_]
