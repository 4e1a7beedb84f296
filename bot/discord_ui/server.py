"""/server-settings: what a server's admins choose."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.discord_ui import refusals
from bot.discord_ui.admin import admin_group, may_change
from bot.discord_ui.handlers import CardHandlers
from bot.discord_ui.options import scheduler_choices, timezone_names
from bot.discord_ui.replies import reply
from bot.engine import SCHEDULERS, WEEKDAYS, BadServerSetting, TutorError, fit_lines

DEFAULT = "default"
APPLY, REVERT = "apply", "revert"
PARAMETERS = {APPLY: "Apply the newest fit", REVERT: "Revert to the ones before"}


def commands(handlers: CardHandlers) -> list[app_commands.Group]:
    servers, fits = handlers.engine.servers, handlers.engine.fits

    server = admin_group("server-settings", "Settings for this server (admins).")

    @server.command(name="public-play",
                    description="Allow learners to show cards to the channel.")
    async def public_play(interaction: discord.Interaction, enabled: bool) -> None:
        if not await may_change(interaction):
            return
        await handlers.db(servers.set_public_play, interaction.guild_id, enabled)
        await reply(interaction, "Public play is now " + ("**allowed**." if enabled else
                                                          "**off**: cards stay private."))

    @server.command(name="reminder-channel",
                    description="Where reminders go for learners whose DMs are closed.")
    @app_commands.describe(channel="Leave empty to stop posting reminders in this server")
    async def reminder_channel(interaction: discord.Interaction,
                               channel: discord.TextChannel | None = None) -> None:
        if not await may_change(interaction):
            return
        await handlers.db(servers.set_reminder_channel, interaction.guild_id,
                          channel.id if channel else None)
        await reply(interaction, f"Reminders for learners with closed DMs go to "
                                 f"{channel.mention}." if channel else
                    "Reminders are no longer posted in this server.")

    @server.command(name="learning",
                    description="How reviews are spaced here, and remediation of mistakes.")
    @app_commands.describe(
        scheduler="For learners who did not choose one in /settings",
        remediation="A wrong answer brings the learner's other cards on that mistake sooner",
        parameters="FSRS's parameters fitted to this server's own reviews")
    @app_commands.choices(scheduler=scheduler_choices("The default", DEFAULT),
                          parameters=[app_commands.Choice(name=name, value=value)
                                      for value, name in PARAMETERS.items()])
    async def learning(interaction: discord.Interaction, scheduler: str | None = None,
                       remediation: bool | None = None,
                       parameters: str | None = None) -> None:
        if not await may_change(interaction):
            return
        guild_id = interaction.guild_id
        try:
            if scheduler is not None:
                await handlers.db(servers.set_scheduler, guild_id,
                                  None if scheduler == DEFAULT else scheduler)
            if remediation is not None:
                await handlers.db(servers.set_remediation, guild_id, remediation)
            if parameters == APPLY:
                await handlers.db(fits.apply, guild_id)
            elif parameters == REVERT:
                await handlers.db(fits.revert, guild_id)
            elif parameters is not None:
                raise BadServerSetting("Parameters are applied or reverted.")
        except TutorError as exc:
            await reply(interaction, refusals.words(exc))
            return
        choice = await handlers.db(servers.default_choice, guild_id)
        panel = await handlers.db(fits.panel, guild_id)
        await reply(interaction, "\n".join([
            f"Learners here are scheduled by **{SCHEDULERS[choice.scheduler]}** unless they "
            f"chose otherwise in /settings; remediation of mistakes is "
            f"**{'on' if choice.remediation else 'off'}**.", "",
            "**FSRS parameters** (for learners on FSRS)", *fit_lines(panel)]))

    @server.command(name="new-season",
                    description="Start a new leaderboard season (history is kept).")
    async def new_season(interaction: discord.Interaction) -> None:
        if not await may_change(interaction):
            return
        season = await handlers.db(servers.new_season, interaction.guild_id)
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
        if not await may_change(interaction):
            return
        try:
            settings = await handlers.db(servers.set_board, interaction.guild_id, timezone,
                                         week_starts)
        except TutorError as exc:
            await reply(interaction, refusals.words(exc))
            return
        await reply(interaction, f"The weekly board restarts every "
                                 f"{WEEKDAYS[settings.week_start]} at midnight, "
                                 f"{settings.timezone}.")

    board_settings.autocomplete("timezone")(timezone_names)

    return [server]
