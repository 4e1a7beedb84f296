"""Reminders in Discord: their wording, the DM (or server channel) they arrive in, their
buttons, and the APScheduler job that runs the engine's sweep (bot/engine/reminders.py)
every minute inside the bot's event loop."""

from __future__ import annotations

import logging

import discord
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.discord_ui.components import handled
from bot.discord_ui.replies import CLOSED_DMS, retrying
from bot.engine import DMClosed, Engine, Reminder
from bot.observability import record_reminders

log = logging.getLogger(__name__)
SWEEP_EVERY_S = 60


def reminder_text(reminder: Reminder) -> str:
    """The message a learner reads, with the commands that change their reminders."""
    cards = "card is" if reminder.due == 1 else "cards are"
    lines = [f"📚 {reminder.due} {cards} due for review."]
    if reminder.streak:
        lines.append(f"🔥 You're on a {reminder.streak}-day streak: keep it going!")
    if reminder.backing_off:
        lines.append("You've skipped a few reminders, so I'll send them less often. "
                     "Review once, or use /settings reminders:True, to get them daily "
                     "again.")
    lines.append("Use the buttons below, or /settings to change the time.")
    return "\n".join(lines)


class ReminderButton(discord.ui.DynamicItem[discord.ui.Button],
                     template=r"srs:rem:(?P<action>review|snooze|pause)"):
    LABELS = {"review": ("Review now", discord.ButtonStyle.primary),
              "snooze": ("Snooze 1 h", discord.ButtonStyle.secondary),
              "pause": ("Pause reminders", discord.ButtonStyle.secondary)}

    def __init__(self, action: str):
        label, style = self.LABELS[action]
        super().__init__(discord.ui.Button(label=label, style=style,
                                           custom_id=f"srs:rem:{action}"))
        self.action = action

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["action"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.handlers.on_reminder(
            interaction, self.action))


def reminder_view() -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for action in ReminderButton.LABELS:
        view.add_item(ReminderButton(action))
    return view


class DiscordReminderSender:
    """The engine's reminder Sender in Discord: a Reminder as a DM (nonce-guarded), or in
    a server's reminder channel."""

    def __init__(self, client: discord.Client):
        self.client = client

    async def _user(self, reminder: Reminder) -> discord.User:
        user_id = int(reminder.external_id.removeprefix("discord:"))
        return self.client.get_user(user_id) or await self.client.fetch_user(user_id)

    async def send_dm(self, reminder: Reminder) -> None:
        user = await self._user(reminder)
        try:
            # The nonce makes a resend after a crash (send done, advance not) a no-op.
            await retrying(lambda: user.send(reminder_text(reminder), view=reminder_view(),
                                             nonce=reminder.nonce))
        except discord.Forbidden as exc:
            if exc.code == CLOSED_DMS:
                raise DMClosed() from None
            raise

    async def send_channel(self, channel_id: int, reminder: Reminder) -> None:
        user = await self._user(reminder)
        channel = self.client.get_channel(channel_id) or await self.client.fetch_channel(
            channel_id)
        await retrying(lambda: channel.send(
            f"{user.mention} {reminder_text(reminder)}\n(I couldn't DM you: open your DMs to "
            "get reminders privately.)", nonce=reminder.nonce,
            allowed_mentions=discord.AllowedMentions(users=[user], everyone=False,
                                                     roles=False)))


class ReminderService:
    """The one sweep job, every minute, in the bot's loop (max one at a time)."""

    def __init__(self, client: discord.Client, engine: Engine):
        self.client, self.engine = client, engine
        self.scheduler = AsyncIOScheduler()

    def start(self) -> None:
        self.scheduler.add_job(self.sweep, "interval", seconds=SWEEP_EVERY_S,
                               id="reminder-sweep", max_instances=1, coalesce=True)
        self.scheduler.start()
        log.info("reminder sweep scheduled every %d s", SWEEP_EVERY_S)

    def stop(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    async def sweep(self) -> None:
        try:
            report = await self.engine.reminder_sweep(DiscordReminderSender(self.client)).run()
        except Exception:  # noqa: BLE001 - the next minute tries again
            log.exception("reminder sweep failed")
            return
        record_reminders(report)
        if report.claimed:
            log.info("reminders: %d sent, %d via a server channel, %d unreachable, "
                     "%d with nothing due, %d too late, %d failed", report.sent,
                     report.via_channel, report.unreachable, report.nothing_due,
                     report.too_late, report.failed)
