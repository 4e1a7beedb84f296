"""Development sync: commands go to one server (instant) instead of globally."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot, intents
from tests.helpers.engines import engine_of

DEV_GUILD = 1_200_000_000_000_000_000


@pytest.fixture
def simcord_bot(bot_tutor) -> TutorBot:
    return TutorBot(engine_of(bot_tutor), dev_guild_id=DEV_GUILD)


async def test_commands_are_synced_to_the_dev_guild_only(simcord_env):
    dev = simcord_env.create_guild(name="dev", id=DEV_GUILD)
    other = simcord_env.create_guild(name="other")
    ann = dev.add_member(simcord_env.create_user("ann"))
    bob = other.add_member(simcord_env.create_user("bob"))
    assert "review" in ann.available_commands(dev.create_text_channel("a"))
    assert bob.available_commands(other.create_text_channel("b")) == ()
    puts = [r.path for r in simcord_env.http_requests if r.method == "PUT"]
    assert puts == [f"/applications/{simcord_env.bot.application_id}/guilds/{DEV_GUILD}/commands"]


def test_the_bot_asks_for_no_privileged_intent():
    wanted = intents()
    assert not (wanted.members or wanted.presences or wanted.message_content)
    assert wanted.guilds and wanted.dm_messages
