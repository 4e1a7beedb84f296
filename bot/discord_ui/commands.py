"""The slash commands. Each one is a few lines over the engine and the card flow."""

from __future__ import annotations

import zoneinfo
from functools import cache

import discord
from discord import app_commands

from bot.discord_ui import render
from bot.discord_ui.community import Community
from bot.discord_ui.components import ForgetButton
from bot.discord_ui.flow import CardFlow
from bot.discord_ui.replies import dm, reply
from bot.servers import WEEKDAYS, Servers
from bot.tutor import TutorError
from scheduler import reminders as schedule

PRIVATE_ONLY = ("This server keeps cards private. An admin can allow public play with "
                "**/server-settings public-play**.")


@cache
def _zones() -> tuple[str, ...]:
    return tuple(sorted(zoneinfo.available_timezones()))


def _learner_command(**kwargs):
    """A learner command: usable in servers and in a DM with the bot."""
    def wrap(func):
        command = app_commands.command(**kwargs)(func)
        return app_commands.allowed_contexts(guilds=True, dms=True, private_channels=False)(
            command)
    return wrap


def build_commands(flow: CardFlow, community: Community
                   ) -> list[app_commands.Command | app_commands.Group]:
    tutor, servers = flow.tutor, Servers(flow.tutor)

    async def play(interaction: discord.Interaction, mode: str, topic: str | None,
                   public: bool) -> None:
        if public and interaction.guild_id and not servers.settings(
                interaction.guild_id).public_play:
            await reply(interaction, PRIVATE_ONLY)
            return
        await flow.serve(interaction, mode, topic, ephemeral=not public)

    @_learner_command(name="review", description="Review the cards that are due now.")
    @app_commands.describe(public="Show the card to the channel (if the server allows it).")
    async def review(interaction: discord.Interaction, public: bool = False) -> None:
        await play(interaction, "review", None, public)

    @_learner_command(name="learn", description="Learn new cards (within your daily limit).")
    @app_commands.describe(public="Show the card to the channel (if the server allows it).")
    async def learn(interaction: discord.Interaction, public: bool = False) -> None:
        await play(interaction, "learn", None, public)

    @_learner_command(name="practice",
                      description="Practise a topic now, even if nothing is due.")
    @app_commands.describe(topic="What to practise", public="Show the card to the channel.")
    async def practice(interaction: discord.Interaction, topic: str | None = None,
                       public: bool = False) -> None:
        topics = {t for card in tutor.servable() for t in card.topics}
        if topic is not None and topic not in topics:
            await reply(interaction, f"No topic '{topic}'. Topics: {', '.join(sorted(topics))}.")
            return
        await play(interaction, "practice", topic, public)

    @practice.autocomplete("topic")
    async def practice_topics(interaction, current: str) -> list[app_commands.Choice[str]]:
        topics = sorted({t for card in tutor.servable() for t in card.topics})
        return [app_commands.Choice(name=t, value=t) for t in topics
                if current.lower() in t][:25]

    @_learner_command(name="stats", description="Your progress.")
    async def stats(interaction: discord.Interaction) -> None:
        learner = flow.learner(interaction.user)
        reviewed, first_try, seen = flow.learners.totals(learner)
        progress = tutor.progress(learner)
        embed = render.progress_embed(
            interaction.user.display_name, progress, reviewed,
            first_try / reviewed if reviewed else None, len(tutor.servable()), seen)
        streak = schedule.current_streak(learner, progress.today)
        embed.add_field(name="Streak", value=f"{streak} day(s)"
                        f" (longest {learner.longest_streak})")
        await interaction.response.defer(ephemeral=True, thinking=True)  # a picture to draw
        files, missed, view = await community.stats_extras(learner, progress.today)
        if missed:
            embed.add_field(name="Your most frequent mistakes", value="\n".join(missed),
                            inline=False)
        embed.set_image(url="attachment://stats.png")
        await interaction.followup.send(embed=embed, files=files, ephemeral=True,
                                        **({"view": view} if view else {}))

    @_learner_command(name="settings", description="Your timezone, reminders and visibility.")
    @app_commands.describe(
        timezone="Your IANA timezone, e.g. Europe/Berlin",
        reminder_hour="Local hour (0-23) for your daily review reminder",
        reminders="Send me a daily DM when cards are due",
        leaderboard="Show me on server leaderboards",
        new_per_day="New cards per day (1-50)",
        quiet_start="Local hour your quiet hours start (no reminders until they end)",
        quiet_end="Local hour your quiet hours end",
        remind_when_due="Only remind me when at least this many cards are due",
        daily_minimum="Reviews a day that keep your streak going",
    )
    async def settings(
        interaction: discord.Interaction,
        timezone: str | None = None,
        reminder_hour: app_commands.Range[int, 0, 23] | None = None,
        reminders: bool | None = None,
        leaderboard: bool | None = None,
        new_per_day: app_commands.Range[int, 1, 50] | None = None,
        quiet_start: app_commands.Range[int, 0, 23] | None = None,
        quiet_end: app_commands.Range[int, 0, 23] | None = None,
        remind_when_due: app_commands.Range[int, 1, 100] | None = None,
        daily_minimum: app_commands.Range[int, 1, 100] | None = None,
    ) -> None:
        learner = flow.learner(interaction.user)
        changes = {k: v for k, v in {
            "timezone": timezone, "reminder_hour": reminder_hour,
            "reminders_enabled": reminders, "leaderboard_visible": leaderboard,
            "new_per_day": new_per_day, "quiet_start": quiet_start, "quiet_end": quiet_end,
            "reminder_min_due": remind_when_due, "daily_minimum": daily_minimum,
        }.items() if v is not None}
        try:
            learner = flow.learners.update_settings(learner, changes)
        except TutorError as exc:
            await reply(interaction, str(exc))
            return
        lines = [
            f"Timezone: **{learner.timezone}** (your day starts at "
            f"{learner.rollover_hour:02d}:00)",
            f"Reminders: **{'on' if learner.reminders_enabled else 'off'}**, at "
            f"{schedule.reminder_hour(learner):02d}:00 when at least {learner.reminder_min_due} "
            "card(s) are due" + (f" (quiet {learner.quiet_start:02d}:00-"
                                 f"{learner.quiet_end:02d}:00)" if learner.quiet_start
                                 is not None and learner.quiet_end is not None else ""),
            f"Streak: a day counts after {learner.daily_minimum} review(s)",
            f"Leaderboards: **{'shown' if learner.leaderboard_visible else 'hidden'}**",
            f"New cards per day: **{learner.new_per_day}**",
        ]
        if reminders:
            await interaction.response.defer(ephemeral=True)
            if not await dm(interaction.user, "Reminders are on: I'll DM you when cards are "
                                              "due. Turn them off with /settings."):
                lines.append("⚠️ I can't DM you: your DMs are closed to me. Allow direct "
                             "messages from this server's members to get reminders.")
        await reply(interaction, ("Saved.\n" if changes else "") + "\n".join(lines))

    @settings.autocomplete("timezone")
    async def timezone_names(interaction, current: str) -> list[app_commands.Choice[str]]:
        needle = current.lower().replace(" ", "_")
        return [app_commands.Choice(name=z, value=z) for z in _zones()
                if needle in z.lower()][:25]

    @_learner_command(name="forget-me", description="Delete all your progress (asks first).")
    async def forget_me(interaction: discord.Interaction) -> None:
        view = discord.ui.View(timeout=None)
        view.add_item(ForgetButton(interaction.user.id, "yes"))
        view.add_item(ForgetButton(interaction.user.id, "no"))
        await interaction.response.send_message(
            "This deletes your progress, review history and settings, everywhere. Sure?",
            view=view, ephemeral=True)

    server = app_commands.Group(
        name="server-settings", description="Settings for this server (admins).",
        guild_only=True, default_permissions=discord.Permissions(manage_guild=True))

    @server.command(name="public-play",
                    description="Allow learners to show cards to the channel.")
    async def public_play(interaction: discord.Interaction, enabled: bool) -> None:
        servers.set_public_play(interaction.guild_id, enabled)
        await reply(interaction, "Public play is now " + ("**allowed**." if enabled else
                                                          "**off**: cards stay private."))

    @server.command(name="reminder-channel",
                    description="Where reminders go for learners whose DMs are closed.")
    @app_commands.describe(channel="Leave empty to stop posting reminders in this server")
    async def reminder_channel(interaction: discord.Interaction,
                               channel: discord.TextChannel | None = None) -> None:
        servers.set_reminder_channel(interaction.guild_id, channel.id if channel else None)
        await reply(interaction, f"Reminders for learners with closed DMs go to "
                                 f"{channel.mention}." if channel else
                    "Reminders are no longer posted in this server.")

    @server.command(name="new-season",
                    description="Start a new leaderboard season (history is kept).")
    async def new_season(interaction: discord.Interaction) -> None:
        season = servers.new_season(interaction.guild_id)
        await reply(interaction, f"Season {season} starts now: the season board "
                                 "is empty again; everyone's history and progress are kept.",
                    ephemeral=False)

    @server.command(name="leaderboard", description="The leaderboard's week for this server.")
    @app_commands.describe(timezone="The server's IANA timezone",
                           week_starts="The day the weekly board restarts")
    @app_commands.choices(week_starts=[app_commands.Choice(name=day, value=i)
                                       for i, day in enumerate(WEEKDAYS)])
    async def board_settings(interaction: discord.Interaction, timezone: str | None = None,
                             week_starts: int | None = None) -> None:
        try:
            settings = servers.set_board(interaction.guild_id, timezone, week_starts)
        except TutorError as exc:
            await reply(interaction, str(exc))
            return
        await reply(interaction, f"The weekly board restarts every "
                                 f"{WEEKDAYS[settings.week_start]} at midnight, "
                                 f"{settings.timezone}.")

    board_settings.autocomplete("timezone")(timezone_names)

    @server.command(name="decks", description="Choose which decks this server plays.")
    @app_commands.describe(deck="A deck id", enabled="Play it here or not")
    async def server_decks(interaction: discord.Interaction, deck: str, enabled: bool) -> None:
        try:
            chosen = servers.set_deck(interaction.guild_id, deck, enabled)
        except TutorError as exc:
            await reply(interaction, str(exc))
            return
        await reply(interaction, "Decks played here: " + ", ".join(
            f"**{tutor.library.deck(d).title}**" for d in chosen) + ".")

    @server_decks.autocomplete("deck")
    async def deck_ids(interaction, current: str) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=deck.title[:100], value=deck_id)
                for deck_id, deck in tutor.library.decks.items() if current in deck_id][:25]

    return [review, learn, practice, stats, settings, forget_me, server]
