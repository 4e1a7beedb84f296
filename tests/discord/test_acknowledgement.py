"""Keeping the event loop free to acknowledge: how long the bot may still try to answer an
interaction (Discord: 3 s), and where engine calls wait."""

import threading
from datetime import UTC, datetime, timedelta

import discord
import pytest

from bot.discord_ui.handlers import CardHandlers
from bot.discord_ui.replies import ACK_FLOOR, ACK_WINDOW, ack_budget
from bot.engine import Engine, Gone
from bot.engine.tutor import Tutor

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


class _ServerDatabaseEngine(Engine):
    database_waits = True  # as on PostgreSQL


@pytest.mark.sqlite_only
async def test_engine_calls_wait_on_a_worker_only_for_a_database_server(store, library, clock):
    loop_thread = threading.get_ident()
    on_sqlite = CardHandlers(Engine(Tutor(store, library, clock=clock), store))
    assert await on_sqlite.db(threading.get_ident) == loop_thread
    on_server = CardHandlers(_ServerDatabaseEngine(Tutor(store, library, clock=clock), store))
    assert await on_server.db(threading.get_ident) != loop_thread
    with pytest.raises(Gone):  # a refusal reaches the handler as it would inline
        await on_server.db(on_server.play.code_card, "nope", 0, None)
