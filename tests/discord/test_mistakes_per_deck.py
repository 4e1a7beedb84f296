"""A mistake belongs to its deck: /stats and /insights resolve (deck id, mistake id), so a
deck another server uploads with the same mistake id cannot put its title in this server's
replies, and a title shows as written (escaped), never as a link or a mention."""

from __future__ import annotations

import discord
import pytest

from tests.helpers.discord import card_id_of, choose, final
from tests.helpers.paths import COMMUNITY_DECK as DECK

LURE = "[Claim your prize](https://evil.example/prize)"
# Server A's private deck: another id, the same mistake id 'in_place', a hostile title.
# Its id sorts before 'tensor-basics', so a lookup by bare mistake id finds it first.
PRIZE = (DECK.replace("tensor-basics", "aaa-prize")
         .replace("title: Thinking to() works in place", f'title: "{LURE}"'))
HOSTILE = "**Bold** move @everyone [Claim your prize](https://evil.example/prize)"


def admin_of(simcord_env, guild):
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    return guild.add_member(simcord_env.create_user(f"admin-{guild.name}"), roles=[admins])


async def upload(admin, channel, text: str, play_only: bool) -> None:
    up = final(await admin.slash(channel, "deck upload", file=("deck.yaml", text.encode())))
    assert up.content.startswith("Uploaded "), up.content
    if play_only:
        await admin.slash(channel, "deck disable", deck="gradient-accumulation")


async def miss_in_place(learner, channel, store) -> None:
    """Learn tensor-basics/move, choose the 'in place' lure, then the right answer."""
    card = (await learner.slash(channel, "learn")).response
    assert card_id_of(store, card) == "tensor-basics/move"
    await choose(learner, card, "none")
    await choose(learner, card, "copy")


async def stats_fields(learner, channel) -> dict[str, str]:
    result = await learner.slash(channel, "stats")
    message = result.followups[-1] if result.followups else result.response
    return {f.name: f.value for f in message.embeds[0].fields}


async def test_another_servers_deck_cannot_retitle_this_servers_mistake(world, simcord_env,
                                                                       store):
    guild_b, channel_b, ann, _ = world
    await upload(admin_of(simcord_env, guild_b), channel_b, DECK, play_only=True)
    guild_a = simcord_env.create_guild(name="Prize Club")
    hall = guild_a.create_text_channel("hall")
    await upload(admin_of(simcord_env, guild_a), hall, PRIZE, play_only=False)
    await miss_in_place(ann, channel_b, store)

    insights = (await ann.slash(channel_b, "insights")).response.embeds[0]
    made = {f.name: f.value for f in insights.fields}["Mistakes made most"]
    assert made == "**Thinking to() works in place** × 1"
    fields = await stats_fields(ann, channel_b)
    assert "Thinking to() works in place" in fields["Your mistakes"]
    for shown in (made, *fields.values()):
        assert "evil.example" not in shown and "Claim" not in shown


@pytest.mark.parametrize("title", [HOSTILE])
async def test_a_mistake_title_shows_as_written(world, simcord_env, title, store):
    guild, channel, ann, _ = world
    text = DECK.replace("title: Thinking to() works in place", f'title: "{title}"')
    await upload(admin_of(simcord_env, guild), channel, text, play_only=True)
    await miss_in_place(ann, channel, store)
    escaped = (r"\*\*Bold\*\* move \@everyone \[Claim your prize\](https://evil.example/"
               "prize)")
    insights = (await ann.slash(channel, "insights")).response.embeds[0]
    made = {f.name: f.value for f in insights.fields}["Mistakes made most"]
    fields = await stats_fields(ann, channel)
    assert made == f"**{escaped}** × 1"
    assert fields["Your mistakes"].startswith(f"🔴 **{escaped}**: chosen 1×")
