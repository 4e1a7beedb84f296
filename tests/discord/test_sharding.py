"""Sharded bots: discord.py's AutoShardedClient routes each server to its shard."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import ShardedTutorBot, TutorBot
from bot.settings import Settings
from tests.helpers.engines import engine_of


@pytest.fixture
def simcord_bot(bot_tutor) -> ShardedTutorBot:
    return ShardedTutorBot(engine_of(bot_tutor), shard_count=2)


@pytest.mark.simcord(shard_count=2)
async def test_servers_on_both_shards_are_served(simcord_env):
    for shard in (0, 1):
        guild = simcord_env.create_guild(name=f"shard {shard}", shard_id=shard)
        channel = guild.create_text_channel("study")
        learner = guild.add_member(simcord_env.create_user(f"learner{shard}"))
        result = await learner.slash(channel, "learn")
        assert result.response.embeds[0].title.startswith("New card")
    assert sorted(simcord_env.bot.shards) == [0, 1]


def test_settings_choose_the_client(app, monkeypatch):
    monkeypatch.delenv("DISCORD_SHARD_COUNT", raising=False)
    assert type(app.discord_bot(Settings(_env_file=None))) is TutorBot
    sharded = app.discord_bot(Settings(_env_file=None, discord_shard_count=4,
                                       discord_shard_ids=[2, 3]))
    assert isinstance(sharded, ShardedTutorBot)
    assert (sharded.shard_count, sharded.shard_ids) == (4, [2, 3])
