"""An unmodified discord.py bot, in its own process, against the offline Discord."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from tests.helpers.offline_discord import BotProcess, OfflineDiscord

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOT_SOURCE = textwrap.dedent('''
    import asyncio, os, signal, discord, yarl
    from discord import app_commands

    discord.http.Route.BASE = os.environ["DISCORD_API_BASE_URL"]
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(os.environ["DISCORD_GATEWAY_URL"])

    class PingView(discord.ui.View):
        @discord.ui.button(label="Click me", custom_id="ping:click")
        async def clicked(self, interaction, button):
            await interaction.response.edit_message(content=f"clicked by {interaction.user.id}")

    class PickView(discord.ui.View):
        @discord.ui.select(custom_id="pick", options=[discord.SelectOption(label=x) for x in "ab"])
        async def picked(self, interaction, select):
            await interaction.response.defer()
            await interaction.edit_original_response(content=f"picked {select.values[0]}")

    class AnswerModal(discord.ui.Modal, title="Answer"):
        answer = discord.ui.TextInput(label="Your answer", custom_id="answer")

        async def on_submit(self, interaction):
            await interaction.response.send_message(f"got {self.answer.value}", ephemeral=True)

    class Bot(discord.Client):
        def __init__(self):
            super().__init__(intents=discord.Intents.default())
            self.tree = app_commands.CommandTree(self)

        async def setup_hook(self):
            await self.tree.sync()

    bot = Bot()
    deck = app_commands.Group(name="deck", description="Decks")
    bot.tree.add_command(deck)

    @bot.tree.command(description="Ping the bot")
    async def ping(interaction: discord.Interaction):
        await interaction.response.send_message("pong", ephemeral=True, view=PingView())

    @bot.tree.command(description="DM me")
    async def dm(interaction: discord.Interaction):
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            await interaction.user.send("hello in private")
        except discord.Forbidden as exc:
            await interaction.followup.send(f"closed {exc.code}")
        else:
            await interaction.followup.send("sent")

    @deck.command(description="Study some cards")
    async def study(interaction: discord.Interaction, count: int, buddy: discord.User = None):
        text = f"study {count} with {buddy.name if buddy else 'nobody'}"
        await interaction.response.send_message(text, view=PickView())

    @bot.tree.command(description="Answer in a modal")
    async def ask(interaction: discord.Interaction):
        await interaction.response.send_modal(AnswerModal())

    async def main():
        # Ctrl-C closes the client, as `tutor run` does. Client.run's own Ctrl-C handling
        # (asyncio.run cancelling the task) could be swallowed by discord.py's wait_for in
        # Python 3.11 and leave the bot running after three of them, alone or in a suite.
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, lambda: loop.create_task(bot.close()))
        async with bot:
            await bot.start("fake-token")

    discord.utils.setup_logging(level=int(os.environ.get("BOT_LOG_LEVEL", "30")))
    asyncio.run(main())
''')


async def launch_bot(server: OfflineDiscord, tmp: Path) -> BotProcess:
    script, log = tmp / "bot.py", tmp / "bot.log"
    script.write_text(BOT_SOURCE)
    env = {**os.environ, "DISCORD_API_BASE_URL": server.api_base,
           "DISCORD_GATEWAY_URL": server.gateway_url, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(script), env=env, stdout=out, stderr=asyncio.subprocess.STDOUT)
    return BotProcess(proc, log)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory):
    """One server and one bot process shared by the module's tests."""
    server = await OfflineDiscord().start()
    bot = await launch_bot(server, tmp_path_factory.mktemp("bot"))
    try:
        await server.wait_ready(timeout=60)  # a bound for a hung bot only
        yield server
    finally:
        rc = await bot.stop()
        await server.stop()
    log = bot.log.read_text()
    assert rc == 0 and "Traceback" not in log and "ERROR" not in log, log


async def test_bot_connects_and_syncs_commands(world):
    identify = await world.wait_ready()
    assert identify["token"] == "fake-token" and identify["intents"]
    commands = await world.wait_commands()
    assert sorted(c["name"] for c in commands) == ["ask", "deck", "dm", "ping"]
    assert all(c["id"] and c["application_id"] == world.application_id for c in commands)
    seen = {(r.method, r.path) for r in world.requests}
    assert ("GET", "/users/@me") in seen
    assert ("PUT", f"/applications/{world.application_id}/commands") in seen
    assert [r for r in world.requests if r.status == 404] == []


@pytest.mark.parametrize("where", ["guild", "dm"])
async def test_ping_replies_ephemeral_and_button_edits(world, where):
    alice = world.create_user("alice")
    guild = world.create_guild("Study Hall", members=[alice]) if where == "guild" else None
    rec = await world.slash(alice, "ping", guild_id=guild and guild["id"])
    assert rec.callback_type == 4
    assert rec.content == "pong" and rec.ephemeral
    button = rec.components[0]["components"][0]
    assert (button["type"], button["custom_id"]) == (2, "ping:click")
    assert rec.message.get("guild_id") == (guild and guild["id"])

    click = await world.click(alice, rec.message, "ping:click")
    assert click.callback_type == 7
    assert rec.message["content"] == f"clicked by {alice['id']}"
    assert rec.ephemeral  # still ephemeral after the edit


async def test_subcommand_select_and_modal(world):
    bob, buddy = world.create_user("bob"), world.create_user("buddy")
    guild = world.create_guild("Deck Club", members=[bob, buddy])
    rec = await world.slash(bob, "deck", {"count": 3, "buddy": buddy}, guild_id=guild["id"],
                            subcommand="study")
    assert rec.content == "study 3 with buddy" and not rec.ephemeral

    pick = await world.select(bob, rec, "pick", ["b"])
    assert pick.callback_type == 6  # deferred update, then PATCH @original
    await pick.wait_edits(1)
    assert rec.message["content"] == "picked b"

    ask = await world.slash(bob, "ask", guild_id=guild["id"])
    assert ask.callback_type == 9 and ask.modal["title"] == "Answer"
    answer = await world.submit_modal(bob, ask.modal["custom_id"], {"answer": "42"})
    assert answer.content == "got 42" and answer.ephemeral


async def test_unknown_routes_and_double_acks_are_visible(world):
    rec = await world.slash(world.create_user("dan"), "ping")
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{world.api_base}/guilds/1/nope") as resp:
            assert resp.status == 404 and resp.headers["Content-Type"] == "application/json"
            assert await resp.json() == {"message": "404: Not Found", "code": 0}
        url = f"{world.api_base}/interactions/{rec.id}/{rec.token}/callback"
        async with http.post(url, json={"type": 6}) as resp:
            assert (resp.status, (await resp.json())["code"]) == (400, 40060)
    assert (world.requests[-2].path, world.requests[-2].status) == ("/guilds/1/nope", 404)


async def test_closed_dms_and_rate_limits(world):
    carol = world.create_user("carol")

    world.fail_next("POST", "/channels/*/messages", 403,
                    {"message": "Cannot send messages to this user", "code": 50007})
    rec = await world.slash(carol, "dm")
    assert rec.callback_type == 5 and rec.ephemeral
    await rec.wait_followups(1)
    assert rec.content == "closed 50007"

    world.fail_next("POST", "/channels/*/messages", 429)
    rec = await world.slash(carol, "dm")
    await rec.wait_followups(1)
    assert rec.content == "sent"
    dm = world.dm_channel(carol)
    posts = [r for r in world.requests if r.path == f"/channels/{dm['id']}/messages"]
    assert [r.status for r in posts[-2:]] == [429, 200]  # discord.py retried after retry_after
    assert world.channel_messages(dm["id"])[-1]["content"] == "hello in private"


# A bound for a hung bot only: a start and a stop (STOP_S), then the module's own bot's.
@pytest.mark.timeout(300)
async def test_bot_process_stops_cleanly(tmp_path):
    async with OfflineDiscord() as server:
        bot = await launch_bot(server, tmp_path)
        await server.wait_ready(timeout=60)  # a bound for a hung bot only
        assert server.connected == 1
        rec = await server.slash(server.create_user("erin"), "ping")  # bot is in its event loop
        assert rec.content == "pong"
        assert await bot.stop() == 0, bot.log.read_text()
        assert bot.proc.returncode is not None  # reaped: no zombie left behind
        await server._wait(lambda: server.connected == 0, 3, "gateway disconnect")
