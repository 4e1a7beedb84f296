"""How long the bot may still try to acknowledge an interaction (Discord: 3 s)."""

from datetime import UTC, datetime, timedelta

import discord

from bot.discord_ui.replies import ACK_FLOOR, ACK_WINDOW, ack_budget

CREATED = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
INTERACTION = discord.utils.time_snowflake(CREATED)


def test_a_fresh_interaction_has_the_whole_window():
    assert ack_budget(INTERACTION, CREATED) == ACK_WINDOW


def test_time_already_spent_comes_off_the_window():
    assert abs(ack_budget(INTERACTION, CREATED + timedelta(seconds=1.2)) - 1.8) < 0.01


def test_a_clock_behind_discords_never_grants_more_than_the_window():
    assert ack_budget(INTERACTION, CREATED - timedelta(seconds=5)) == ACK_WINDOW


def test_a_clock_ahead_of_discords_still_leaves_time_to_answer():
    assert ack_budget(INTERACTION, CREATED + timedelta(seconds=10)) == ACK_FLOOR
