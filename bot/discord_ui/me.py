"""A learner's own things: /stats, /settings, /forget-me and its confirmation buttons."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.discord_ui import refusals
from bot.discord_ui.community import Community
from bot.discord_ui.components import handled
from bot.discord_ui.handlers import CardHandlers
from bot.discord_ui.options import learner_command, scheduler_choices, timezone_names
from bot.discord_ui.render import BLUE
from bot.discord_ui.replies import dm, reply
from bot.engine import (
    DISCORD,
    RANGES,
    SCHEDULERS,
    Choice,
    Learner,
    LearnerMistake,
    Progress,
    TutorError,
    counted,
    current_streak,
    when,
)
from bot.engine import reminder_hour as reminder_hour_of  # /settings has an option so named
from content.safe_text import literal


class ForgetButton(discord.ui.DynamicItem[discord.ui.Button],
                   template=r"srs:forget:(?P<user>\d{1,20}):(?P<choice>yes|no)"):
    def __init__(self, user_id: int, choice: str):
        yes = choice == "yes"
        super().__init__(discord.ui.Button(
            label="Yes, delete everything" if yes else "Cancel",
            style=discord.ButtonStyle.danger if yes else discord.ButtonStyle.secondary,
            custom_id=f"srs:forget:{user_id}:{choice}"))
        self.user_id, self.choice = user_id, choice

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(int(match["user"]), match["choice"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.handlers.on_forget(
            interaction, self.user_id, self.choice == "yes"))



def _range(setting: str):
    """The option's range as Discord's client offers it: the engine's own (bot.engine.learners),
    which it checks again, since a forged interaction can send anything."""
    low, high = RANGES[setting]
    return app_commands.Range[int, low, high]


Hour = _range("reminder_hour")
NewPerDay = _range("new_per_day")
AtLeast = _range("reminder_min_due")
DailyMinimum = _range("daily_minimum")
FOLLOW_SERVER = "server"


def commands(handlers: CardHandlers, community: Community) -> list[app_commands.Command]:
    tutor = handlers.tutor

    @learner_command(name="stats", description="Your progress.")
    async def stats(interaction: discord.Interaction) -> None:
        learner = await handlers.learner(interaction.user)
        reviewed, first_try = await handlers.db(handlers.learners.totals, learner)
        # Due, next review and cards seen: over the decks this learner plays here.
        progress = await handlers.db(handlers.engine.plays.progress, learner,
                                     interaction.guild_id)
        embed = progress_embed(
            interaction.user.display_name, progress, reviewed,
            first_try / reviewed if reviewed else None)
        streak = current_streak(learner, progress.today)
        embed.add_field(name="Streak", value=f"{counted(streak, 'day')}"
                        f" (longest {learner.longest_streak})")
        embed.add_field(name="Scheduler", value=scheduler_line(learner, progress.choice))
        played = await handlers.db(handlers.engine.plays.decks, learner.id, interaction.guild_id)
        mistakes = await handlers.db(handlers.learners.mistakes, learner, played)
        if mistakes:  # one list: open ones first, then the ones corrected
            embed.add_field(name="Your mistakes", inline=False,
                            value=field_text(misconception_lines(mistakes)))
        await interaction.response.defer(ephemeral=True, thinking=True)  # a picture to draw
        files, view = await community.stats_extras(
            learner, progress.today, [m for m in mistakes if m.is_open], interaction.guild_id)
        embed.set_image(url="attachment://stats.png")
        await interaction.followup.send(embed=embed, files=files, ephemeral=True,
                                        **({"view": view} if view else {}))

    @learner_command(name="settings", description="Your timezone, reminders and visibility.")
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
        scheduler="How your reviews are spaced (your history is kept under both)",
    )
    @app_commands.choices(scheduler=scheduler_choices("This server's choice", FOLLOW_SERVER))
    async def settings(
        interaction: discord.Interaction,
        timezone: str | None = None,
        reminder_hour: Hour | None = None,
        reminders: bool | None = None,
        leaderboard: bool | None = None,
        new_per_day: NewPerDay | None = None,
        quiet_start: Hour | None = None,
        quiet_end: Hour | None = None,
        remind_when_due: AtLeast | None = None,
        daily_minimum: DailyMinimum | None = None,
        scheduler: str | None = None,
    ) -> None:
        learner = await handlers.learner(interaction.user)
        changes = {k: v for k, v in {
            "timezone": timezone, "reminder_hour": reminder_hour,
            "reminders_enabled": reminders, "leaderboard_visible": leaderboard,
            "new_per_day": new_per_day, "quiet_start": quiet_start, "quiet_end": quiet_end,
            "reminder_min_due": remind_when_due, "daily_minimum": daily_minimum,
        }.items() if v is not None}
        if scheduler is not None:  # "server": follow the server's choice again
            changes["scheduler"] = None if scheduler == FOLLOW_SERVER else scheduler
        try:
            learner = await handlers.db(handlers.learners.update_settings, learner, changes)
        except TutorError as exc:
            await reply(interaction, refusals.words(exc))
            return
        lines = [
            f"Timezone: **{learner.timezone}** (your day starts at "
            f"{learner.rollover_hour:02d}:00)",
            f"Reminders: **{'on' if learner.reminders_enabled else 'off'}**, at "
            f"{reminder_hour_of(learner):02d}:00 when at least "
            f"{counted(learner.reminder_min_due, 'card')} "
            + ("is" if learner.reminder_min_due == 1 else "are") + " due"
            + (f" (quiet {learner.quiet_start:02d}:00-{learner.quiet_end:02d}:00)"
               if learner.quiet_start is not None and learner.quiet_end is not None else ""),
            f"Streak: a day counts after {counted(learner.daily_minimum, 'review')}",
            f"Leaderboards: **{'shown' if learner.leaderboard_visible else 'hidden'}**",
            f"New cards per day: **{learner.new_per_day}**",
            "Scheduler: " + scheduler_line(
                learner, await handlers.db(tutor.choice, learner, interaction.guild_id)),
        ]
        if reminders:
            await interaction.response.defer(ephemeral=True)
            if not await dm(interaction.user, "Reminders are on: I'll DM you when cards are "
                                              "due. Turn them off with /settings."):
                lines.append("⚠️ I can't DM you: your DMs are closed to me. Allow direct "
                             "messages from this server's members to get reminders.")
        await reply(interaction, ("Saved.\n" if changes else "") + "\n".join(lines))

    settings.autocomplete("timezone")(timezone_names)

    @learner_command(name="forget-me", description="Delete all your progress (asks first).")
    async def forget_me(interaction: discord.Interaction) -> None:
        view = discord.ui.View(timeout=None)
        view.add_item(ForgetButton(interaction.user.id, "yes"))
        view.add_item(ForgetButton(interaction.user.id, "no"))
        await interaction.response.send_message(
            "This deletes your progress, review history and settings, everywhere. Sure?",
            view=view, ephemeral=True)

    return [stats, settings, forget_me]


def progress_embed(name: str, p: Progress, reviewed: int,
                   accuracy: float | None) -> discord.Embed:
    embed = discord.Embed(title=f"{literal(name)}'s progress", colour=BLUE)
    due = p.due_now + p.drills_left  # what /review serves now, re-drills included
    embed.add_field(name="Due now", value=str(due) + (
        f" ({counted(p.drills_left, 're-drill')})" if p.drills_left else ""))
    embed.add_field(name="New left today", value=str(p.new_left_today))
    embed.add_field(name="Cards seen", value=f"{p.seen} / {p.cards}")
    embed.add_field(name="Reviews", value=str(reviewed))
    embed.add_field(name="First-try accuracy",
                    value="–" if accuracy is None else f"{accuracy:.0%}")
    embed.add_field(name="Next review",
                    value="now" if due else when(p.next_due, p.today) if p.next_due
                    else "–")
    return embed


def scheduler_line(learner: Learner, choice: Choice) -> str:
    whose = "your choice" if learner.scheduler else "this server's choice"
    return (f"**{SCHEDULERS[choice.scheduler]}** ({whose}); remediation of mistakes "
            f"**{'on' if choice.remediation else 'off'}**")


def field_text(lines: list[str], limit: int = DISCORD.field_value) -> str:
    """Lines for one embed field, dropping whole lines past Discord's field limit."""
    out = ""
    for line in lines:
        if len(out) + len(line) + 1 > limit:
            break
        out += ("\n" if out else "") + line
    return out or "–"


def misconception_lines(mistakes: list[LearnerMistake], limit: int = 8) -> list[str]:
    """Open misconceptions (and when each was last corrected, if it came back), then the
    most recently corrected; Discord shows the times in the reader's own timezone."""
    lines = []
    for m in mistakes[:limit]:
        shown = f"chosen {m.times_shown}×, last {discord.utils.format_dt(m.last_shown_at, 'R')}"
        corrected = (f"corrected {discord.utils.format_dt(m.last_corrected_at, 'R')}"
                     if m.last_corrected_at else None)
        if m.is_open:
            lines.append(f"🔴 **{literal(m.title)}**: {shown}"
                         + (f"; {corrected}, then back" if corrected else ""))
        else:
            lines.append(f"✅ {literal(m.title)}: {corrected}")
    return lines
