"""Reminders through the real discord.py client: the DM, its buttons, closed DMs."""

from __future__ import annotations

from datetime import timedelta

import discord

from bot.discord_ui.client import TutorBot
from bot.discord_ui.reminders import SWEEP_EVERY_S, DiscordReminderSender
from bot.engine.reminders import ReminderSweep
from tests.helpers.discord import learner_of, pick_and_submit
from tests.helpers.engines import engine_of


async def due_reminder(ann, channel, store, clock):
    """ann learned a card yesterday (due today) and opted in; her reminder is due now."""
    card = (await ann.slash(channel, "learn")).response
    await pick_and_submit(ann, card, {"method": "zero_grad"})
    await ann.slash(channel, "settings", reminders=True, timezone="UTC", reminder_hour=18)
    clock.advance(days=1)
    person = learner_of(store, ann)
    store.learners.update(person.id, next_reminder_at=clock.now)
    return person


async def run_sweep(simcord_env, store, clock):
    return await ReminderSweep(store, DiscordReminderSender(simcord_env.bot),
                               clock=clock).run()


async def test_a_reminder_dm_has_the_due_count_streak_and_buttons(world, simcord_env, store,
                                                                  clock):
    _, channel, ann, _ = world
    await due_reminder(ann, channel, store, clock)
    report = await run_sweep(simcord_env, store, clock)
    assert report.sent == 1
    message = ann.user.dm_channel.last_message
    assert "1 card is due for review." in message.content
    assert "1-day streak" in message.content
    labels = [c.label for row in message.components for c in row.children]
    assert labels == ["Review now", "Snooze 1 h", "Pause reminders"]
    sent = [r.json for r in simcord_env.http_requests
            if r.method == "POST" and r.path.endswith("/messages")][-1]
    assert sent["nonce"].startswith("rem") and sent["enforce_nonce"] is True
    assert (await run_sweep(simcord_env, store, clock)).sent == 0  # once a day


async def test_reminder_buttons_review_snooze_and_pause(world, simcord_env, store, clock):
    _, channel, ann, _ = world
    person = await due_reminder(ann, channel, store, clock)
    await run_sweep(simcord_env, store, clock)
    dm = ann.user.dm_channel.last_message
    review = await ann.user.click(dm, label="Review now")
    assert review.response.embeds[0].title.startswith("Review")
    assert not review.ephemeral
    snooze = await ann.user.click(dm, label="Snooze 1 h")
    # The reminder itself says what was done, and has no button left to press again.
    assert snooze.response.content.startswith("📚 1 card is due for review.")
    assert "⏰ Snoozed: I'll remind you again <t:" in snooze.response.content
    assert not snooze.response.components
    assert store.learners.get(person.id).next_reminder_at == clock.now + timedelta(hours=1)
    clock.advance(hours=1)
    assert (await run_sweep(simcord_env, store, clock)).sent == 1  # the snoozed reminder
    again = ann.user.dm_channel.last_message
    pause = await ann.user.click(again, label="Pause reminders")
    assert "⏸️ Reminders paused." in pause.response.content
    assert "/settings reminders:True" in pause.response.content
    assert not pause.response.components
    paused = store.learners.get(person.id)
    assert not paused.reminders_enabled and paused.next_reminder_at is None


async def test_closed_dms_go_to_the_servers_reminder_channel(world, simcord_env, store, clock):
    guild, channel, ann, _ = world
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    reminders = guild.create_text_channel("reminders")
    set_channel = await admin.slash(channel, "server-settings reminder-channel",
                                    channel=reminders)
    assert f"<#{reminders.id}>" in set_channel.response.content
    assert store.servers.settings(guild.id).reminder_channel_id == reminders.id
    await due_reminder(ann, channel, store, clock)
    simcord_env.inject_error("POST", f"/channels/{ann.user.dm_channel.id}/messages",
                             status=403, code=50007, message="Cannot send messages")
    report = await run_sweep(simcord_env, store, clock)
    assert report.via_channel == 1
    posted = reminders.last_message
    assert f"<@{ann.id}>" in posted.content and "couldn't DM you" in posted.content


async def test_the_sweep_runs_every_minute_in_the_bot(bot_tutor):
    bot = TutorBot(engine_of(bot_tutor), reminders=True)
    bot.reminders.start()
    try:
        job = bot.reminders.scheduler.get_job("reminder-sweep")
        assert job.trigger.interval == timedelta(seconds=SWEEP_EVERY_S)
        assert job.max_instances == 1 and job.coalesce
    finally:
        bot.reminders.stop()
        await bot.close()
