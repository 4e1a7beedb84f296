"""Discord tests run the real discord.py client against SimCord's in-memory Discord."""

from __future__ import annotations

import discord
import pytest

from bot.discord_ui.client import TutorBot
from bot.engine.community_decks import CommunityDecks
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary
from tests.helpers.engines import engine_of


@pytest.fixture(scope="session")
def library() -> DeckLibrary:
    return DeckLibrary.load()


@pytest.fixture
def deck_library(library) -> DeckLibrary:
    return library


@pytest.fixture
def bot_tutor(tutor) -> Tutor:
    return tutor


@pytest.fixture
def simcord_bot(bot_tutor) -> TutorBot:
    return TutorBot(engine_of(bot_tutor))


@pytest.fixture
def code_tutor(store, mini_library, clock, request) -> Tutor:
    """The mini deck's tutor, judged by the test module's own fake code judge (its `judge`):
    a module that uses it serves `simcord_bot` from it."""
    return Tutor(store, mini_library, clock=clock, code_judge=request.module.judge)


@pytest.fixture
def world(simcord_env):
    """A server with a #study channel and two learners."""
    guild = simcord_env.create_guild(name="Study Group")
    channel = guild.create_text_channel("study")
    ann = guild.add_member(simcord_env.create_user("ann"))
    bob = guild.add_member(simcord_env.create_user("bob"))
    return guild, channel, ann, bob


@pytest.fixture
def admin(world, simcord_env):
    """A member of the world's server with Manage Server."""
    guild, *_ = world
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    return guild.add_member(simcord_env.create_user("root"), roles=[admins])


@pytest.fixture
def decks(bot_tutor) -> CommunityDecks:
    return engine_of(bot_tutor).decks
