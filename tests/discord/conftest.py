"""Discord tests run the real discord.py client against SimCord's in-memory Discord."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary


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
    return TutorBot(bot_tutor)


@pytest.fixture
def world(simcord_env):
    """A server with a #study channel and two learners."""
    guild = simcord_env.create_guild(name="Study Group")
    channel = guild.create_text_channel("study")
    ann = guild.add_member(simcord_env.create_user("ann"))
    bob = guild.add_member(simcord_env.create_user("bob"))
    return guild, channel, ann, bob
