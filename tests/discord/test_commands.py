"""/stats, /settings, /forget-me, /server-settings, command sync and failure handling."""

from __future__ import annotations

import logging

import discord

from tests.helpers.clock import store_now
from tests.helpers.discord import learner_of, pick_and_submit


def final_text(result) -> str:
    """After a defer, the first follow-up fills the deferred reply itself."""
    return result.followups[-1].content if result.followups else result.response.content


LEARNER_COMMANDS = {"review", "learn", "practice", "help", "stats", "settings", "forget-me",
                    "leaderboard", "insights"}


async def test_every_command_is_synced_and_admin_ones_are_hidden(world, simcord_env):
    guild, channel, ann, _ = world
    assert set(ann.available_commands(channel)) == LEARNER_COMMANDS
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    assert set(admin.available_commands(channel)) == LEARNER_COMMANDS | {
        "server-settings public-play", "server-settings reminder-channel",
        "server-settings new-season", "server-settings leaderboard", "server-settings learning",
        *(f"deck {c}" for c in ("upload", "list", "show", "enable", "disable", "publish",
                                "remove", "export"))}


async def test_admins_turn_public_play_on_and_off(world, simcord_env, store):
    guild, channel, ann, _ = world
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    result = await admin.slash(channel, "server-settings public-play", enabled=True)
    assert result.ephemeral and "Public play is now **allowed**." in result.response.content
    assert store.servers.settings(guild.id).public_play
    card = await ann.slash(channel, "learn", public=True)
    assert not card.ephemeral
    await admin.slash(channel, "server-settings public-play", enabled=False)
    assert not store.servers.settings(guild.id).public_play


async def test_stats_shows_progress(world, bot_tutor):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    await pick_and_submit(ann, card, {"method": "zero_grad"})
    result = await ann.slash(channel, "stats")
    assert result.ephemeral
    fields = {f.name: f.value for f in result.response.embeds[0].fields}
    assert fields["Reviews"] == "1" and fields["First-try accuracy"] == "100%"
    servable = len(bot_tutor.servable())  # every card but the code cards (no sandbox here)
    assert fields["Cards seen"] == f"1 / {servable}" and fields["Next review"] == "tomorrow"
    assert fields["New left today"] == "9"


async def test_settings_saves_a_timezone_and_rejects_unknown_ones(world, store):
    _, channel, ann, _ = world
    choices = await ann.autocomplete(channel, "settings", "timezone", "berl")
    assert [c["value"] for c in choices] == ["Europe/Berlin"]
    bad = await ann.slash(channel, "settings", timezone="Mars/Olympus")
    assert "'Mars/Olympus' is not a timezone I know" in bad.response.content
    good = await ann.slash(channel, "settings", timezone="Europe/Berlin", reminder_hour=7,
                           leaderboard=False, new_per_day=5)
    assert "Saved." in good.response.content and "**Europe/Berlin**" in good.response.content
    learner = learner_of(store, ann)
    assert (learner.timezone, learner.reminder_hour, learner.leaderboard_visible,
            learner.new_per_day) == ("Europe/Berlin", 7, False, 5)
    shown = await ann.slash(channel, "settings")
    assert "Saved." not in shown.response.content and "at 07:00" in shown.response.content


async def test_turning_reminders_on_warns_when_dms_are_closed(world, simcord_env, store):
    _, channel, ann, _ = world
    simcord_env.inject_error("POST", "/channels/*/messages", status=403, code=50007,
                             message="Cannot send messages to this user")
    result = await ann.slash(channel, "settings", reminders=True)
    text = final_text(result)
    assert "Reminders: **on**" in text and "your DMs are closed" in text
    assert learner_of(store, ann).reminders_enabled


async def test_turning_reminders_on_sends_a_confirmation_dm(world, simcord_env):
    _, channel, ann, _ = world
    result = await ann.slash(channel, "settings", reminders=True)
    text = final_text(result)
    assert "DMs are closed" not in text
    assert "Reminders are on" in ann.user.dm_channel.last_message.content


async def test_forget_me_asks_first_and_then_deletes_everything(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    await pick_and_submit(ann, card, {"method": "zero_grad"})
    learner_id = learner_of(store, ann).id
    ask = await ann.slash(channel, "forget-me")
    assert ask.ephemeral and "Sure?" in ask.response.content
    cancel = await ann.click(ask.response, label="Cancel")
    # The answer replaces the question: no "Sure?" left above it, no button to press again.
    assert cancel.response.content == "Nothing was deleted."
    assert not cancel.response.components
    assert store.reviews.on_day(learner_id, store_now().date())
    ask = await ann.slash(channel, "forget-me")
    done = await ann.click(ask.response, label="Yes, delete everything")
    assert done.response.content == "Done: your progress, reviews and settings are deleted."
    assert not done.response.components
    assert store.learners.get(learner_id) is None
    assert store.reviews.on_day(learner_id, store_now().date()) == []


async def test_a_failing_handler_apologises_logs_and_the_bot_keeps_serving(
        world, simcord_env, bot_tutor, monkeypatch, caplog):
    _, channel, ann, bob = world
    real = bot_tutor.next_card

    def broken(learner, **kwargs):
        if learner.external_id == f"discord:{ann.id}":
            raise RuntimeError("database on fire")
        return real(learner, **kwargs)

    monkeypatch.setattr(bot_tutor, "next_card", broken)
    with caplog.at_level(logging.ERROR):
        result = await ann.slash(channel, "review")
    assert result.ephemeral and "Sorry, something went wrong" in result.response.content
    assert "database on fire" in caplog.text and f"user={ann.id}" in caplog.text
    # discord.py saw the command fail (and handed it to our error handler): no more.
    assert [str(getattr(e, "original", e)) for e in simcord_env.errors] == ["database on fire"]
    assert (await bob.slash(channel, "learn")).response.embeds[0].title.startswith("New card")


async def test_a_failing_button_apologises(world, bot_tutor, monkeypatch, caplog):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    monkeypatch.setattr(bot_tutor, "answer", lambda *a, **k: 1 / 0)
    with caplog.at_level(logging.ERROR):
        result = await ann.click(card, label="A")
    assert "Sorry, something went wrong" in result.response.content
    assert "ZeroDivisionError" in caplog.text and "srs:opt:" in caplog.text


async def test_practice_autocompletes_topics_and_rejects_unknown_ones(world):
    _, channel, ann, _ = world
    choices = await ann.autocomplete(channel, "practice", "topic", "loss")
    assert choices == [{"name": "loss scaling", "value": "loss-scaling"},
                       {"name": "token losses", "value": "token-losses"}]  # words shown
    result = await ann.slash(channel, "practice", topic="astrology")
    assert "No topic `astrology` in the decks you play here" in result.response.content


async def test_a_rate_limited_dm_is_retried_not_lost(world, simcord_env):
    _, channel, ann, _ = world
    simcord_env.inject_error("POST", "/channels/*/messages", status=429, times=2,
                             message="You are being rate limited.")
    result = await ann.slash(channel, "settings", reminders=True)
    text = final_text(result)
    assert "Reminders: **on**" in text and "DMs are closed" not in text
    assert "Reminders are on" in ann.user.dm_channel.last_message.content


async def test_a_rate_limit_that_persists_gets_an_apology(world, simcord_env, caplog):
    _, channel, ann, _ = world
    simcord_env.inject_error("POST", "/channels/*/messages", status=429, times=None)
    with caplog.at_level(logging.WARNING):
        result = await ann.slash(channel, "settings", reminders=True)
    assert "Sorry, something went wrong" in final_text(result)
    assert "rate limited (429)" in caplog.text
    assert any(getattr(e, "status", None) == 429 for e in
               (getattr(x, "original", x) for x in simcord_env.errors))


async def test_a_new_learner_is_welcomed_once_and_help_says_the_same(world):
    _, channel, ann, bob = world
    first = (await ann.slash(channel, "learn")).response
    assert first.content.startswith("👋 **Welcome!**")
    for command in ("/learn", "/review", "/practice", "/stats", "/settings"):
        assert f"**{command}**" in first.content
    assert len(first.content.splitlines()) <= 6  # a few lines, above the card
    await pick_and_submit(ann, first, {"method": "zero_grad"})
    again = (await ann.slash(channel, "learn")).response
    assert not again.content  # answered a card: no welcome any more
    helped = (await bob.slash(channel, "help")).response
    assert helped.ephemeral and "**/learn**: new cards" in helped.content
    assert "**/forget-me**" in helped.content and "Welcome" not in helped.content
