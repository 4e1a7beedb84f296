"""/leaderboard (pages, picture), /insights, /stats' picture and seasons, through the real
discord.py client."""

from __future__ import annotations

import io

import discord
import simcord.actors
from matplotlib import image

from tests.helpers.discord import (
    card_id_of,
    final,
    learner_of,
    pick_and_submit,
    still_showing,
)
from tests.helpers.paths import COMMUNITY_DECK
from tests.helpers.records import record


def seed_board(store, guild, members) -> None:
    """Member i did 13 - i first-try due reviews in this server."""
    for i, member in enumerate(members):
        person = store.learners.get_or_create(f"discord:{member.id}", display_name=member.name,
                                              now=store_now())
        for j in range(13 - i):
            store.record(record(person.id, f"{member.id}-{j}", card_id=f"d/c{j}",
                                kind="review", guild_id=guild.id, changes_schedule=False,
                                reviewed_at=store_now()))


def store_now():
    from tests.helpers.clock import FakeClock
    return FakeClock()()


def add_members(simcord_env, guild, count: int) -> list:
    return [guild.add_member(simcord_env.create_user(f"user{i:02d}")) for i in range(count)]


async def test_the_weekly_board_pages_and_shows_the_callers_rank(world, simcord_env, store):
    guild, channel, _, _ = world
    members = add_members(simcord_env, guild, 12)
    seed_board(store, guild, members)
    last = members[-1]  # rank 12: outside the first page
    result = await last.slash(channel, "leaderboard")
    assert not result.ephemeral
    embed = result.response.embeds[0]
    assert embed.title == "Study Group · this week"
    lines = embed.description.splitlines()
    assert lines[0].startswith("`# 1` **user00** — 130 pts")
    assert len(lines) == 12 and lines[-1].endswith("← you") and "`#12`" in lines[-1]
    assert embed.footer.text.startswith("Page 1/2 · 12 learners")
    page_two = await last.click(result.response, label="Next ▶")
    two = page_two.response.embeds[0]
    assert two.footer.text.startswith("Page 2/2") and "user10" in two.description
    back = await last.click(page_two.response, label="◀ Prev")
    assert back.response.embeds[0].footer.text.startswith("Page 1/2")


async def test_hidden_learners_are_left_off_the_board(world, simcord_env, store):
    guild, channel, _, _ = world
    members = add_members(simcord_env, guild, 3)
    seed_board(store, guild, members)
    await members[0].slash(channel, "settings", leaderboard=False)
    board = await members[1].slash(channel, "leaderboard")
    assert "user00" not in board.response.embeds[0].description
    # One page: nothing to turn, so no Prev/Next.
    assert board.response.embeds[0].footer.text.startswith("Page 1/1 · 2 learners")
    assert not board.response.components


async def test_the_board_can_come_as_a_picture(world, simcord_env, store):
    guild, channel, _, _ = world
    members = add_members(simcord_env, guild, 3)
    seed_board(store, guild, members)
    result = await members[0].slash(channel, "leaderboard", image=True)
    (attachment,) = result.response.attachments
    png = await attachment.read()
    pixels = image.imread(io.BytesIO(png), format="png")
    assert pixels.shape[0] > 100 and pixels.shape[1] > 300 and pixels.std() > 0.01


async def test_a_new_season_empties_the_season_board_and_keeps_history(world, simcord_env,
                                                                       store, clock):
    guild, channel, ann, _ = world
    seed_board(store, guild, [ann])
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    before = await ann.slash(channel, "leaderboard", period="season")
    assert "130 pts" in before.response.embeds[0].description
    clock.advance(minutes=1)
    started = await admin.slash(channel, "server-settings new-season")
    assert "Season 2 starts now" in started.response.content
    after = await ann.slash(channel, "leaderboard", period="season")
    assert after.response.embeds[0].title.endswith("season 2")
    assert "No reviews in this server yet." in after.response.embeds[0].description
    assert len(store.reviews.on_day(learner_of(store, ann).id, store_now().date())) == 13


async def test_admins_set_the_boards_timezone_and_week_start(world, simcord_env, store):
    guild, channel, _, _ = world
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(simcord_env.create_user("root"), roles=[admins])
    result = await admin.slash(channel, "server-settings leaderboard", timezone="Asia/Tokyo",
                               week_starts=6)
    assert "every Sunday at midnight, Asia/Tokyo" in result.response.content
    settings = store.servers.settings(guild.id)
    assert (settings.timezone, settings.week_start) == ("Asia/Tokyo", 6)


async def test_insights_show_what_the_server_misses_most(world, store):
    guild, channel, ann, bob = world
    for who in (ann, bob):
        card = (await who.slash(channel, "learn")).response
        await pick_and_submit(who, card, {"method": "step"})
        await pick_and_submit(who, card, {"method": "zero_grad"})
    result = await ann.slash(channel, "insights")
    fields = {f.name: f.value for f in result.response.embeds[0].fields}
    # The card as learners know it, by its prompt; never its id.
    assert ("**Complete the line that ends each window, so the next…** missed 2 of 2"
            in fields["Cards missed most"])
    assert "zero-grad" not in fields["Cards missed most"]
    assert "Stepping where gradients should be cleared** × 2" in fields["Mistakes made most"]


async def stats_after_missing_zero_grad(ann, channel):
    """ann misses the zero-grad card once, then opens /stats: the message it gets."""
    card = (await ann.slash(channel, "learn")).response
    await pick_and_submit(ann, card, {"method": "step"})
    await pick_and_submit(ann, card, {"method": "zero_grad"})
    return final(await ann.slash(channel, "stats"))


async def test_stats_attach_a_heatmap_and_offer_practice_on_each_open_mistake(world, store):
    _, channel, ann, _ = world
    message = await stats_after_missing_zero_grad(ann, channel)
    assert message.ephemeral
    embed = message.embeds[0]
    fields = {f.name: f.value for f in embed.fields}
    # One list of mistakes, not two; the first try's card counts as due now until drilled.
    assert [name for name in fields if "mistake" in name.lower()] == ["Your mistakes"]
    assert fields["Your mistakes"].startswith(
        "🔴 **Stepping where gradients should be cleared**: chosen 1×")
    assert fields["Due now"] == "1 (1 re-drill)" and fields["Next review"] == "now"
    (attachment,) = message.attachments
    pixels = image.imread(io.BytesIO(await attachment.read()), format="png")
    # Only new cards so far: the heatmap alone, no empty retention chart under it.
    assert pixels.shape[1] >= 800 and pixels.shape[0] < 500 and pixels.std() > 0.01
    (button,) = [c["label"] for row in message.components for c in row["components"]]
    assert button == "Practise: Stepping where gradients should be cleared"
    again = await ann.click(message, label=button)
    assert card_id_of(store, again.response) == "gradient-accumulation/zero-grad"


async def test_a_review_button_for_a_deck_the_server_turned_off_says_so(world, admin, store):
    _, channel, ann, _ = world
    message = await stats_after_missing_zero_grad(ann, channel)
    await admin.slash(channel, "deck upload", file=("deck.yaml", COMMUNITY_DECK.encode()))
    await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    (button,) = [c["label"] for row in message.components for c in row["components"]]
    again = await ann.click(message, label=button)
    assert again.response.content == "That card is not in the decks played here."


async def test_the_board_and_insights_from_a_dm_say_use_a_server(world, simcord_env, store,
                                                                 monkeypatch):
    """From a DM (a forged client: Discord's own offers them in servers only) they show no
    server's standings or mistakes, and are no error either."""
    guild, channel, ann, bob = world
    seed_board(store, guild, [ann, bob])
    card = (await bob.slash(channel, "learn")).response
    await pick_and_submit(bob, card, {"method": "step"})  # a mistake /insights would show
    monkeypatch.setattr(simcord.actors, "_check_command_access", lambda *args: None)
    asked = [await ann.user.slash("leaderboard"), await ann.user.slash("insights"),
             await ann.user.slash("leaderboard", period="season", page=2, image=True)]
    # A board's page button, in a DM message as a forged client shows it.
    mine = (await ann.user.slash("practice", topic="concept")).response
    still_showing(mine, [{"type": 1, "components": [
        {"type": 2, "style": 2, "label": "Next ▶", "custom_id": "srs:lb:week:1:next"}]}])
    asked.append(await ann.user.click(mine, label="Next ▶"))
    for result in asked:
        assert result.ephemeral and not result.followups
        message = result.response
        assert message.content.startswith("Use this in a server: "), message.content
        assert "that server's" in message.content
        assert not message.embeds and not message.attachments


async def test_the_board_links_to_its_web_page_where_one_is_served(world, simcord_env, store,
                                                                   simcord_bot):
    guild, channel, _, _ = world
    members = add_members(simcord_env, guild, 12)
    seed_board(store, guild, members)
    simcord_bot.community.web_url = "https://tutor.example"
    board = await members[0].slash(channel, "leaderboard", period="season")
    (row,) = board.response.components
    link = [b for b in row["components"] if b.get("label") == "On the web"][0]
    assert link["url"] == f"https://tutor.example/servers/{guild.id}/leaderboard?period=season"
    turned = await members[0].click(board.response, label="Next ▶")
    assert any(b.get("label") == "On the web" for b in turned.response.components[0]["components"])
