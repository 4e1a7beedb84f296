"""The bot: a discord.py client with the tutor's commands and persistent components. It
takes plain arguments: the composition root (bot/app.py) builds it with `make_bot` from the
settings and runs it with `connect`."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import signal

import discord
import yarl
from discord import app_commands

from bot.discord_ui import cards, decks, me, server
from bot.discord_ui.community import (
    BoardButton,
    Community,
    MistakeButton,
    ReviewCardButton,
    build_community_commands,
)
from bot.discord_ui.components import route
from bot.discord_ui.fit_job import FitJob
from bot.discord_ui.handlers import CardHandlers
from bot.discord_ui.malformed import guard_interactions
from bot.discord_ui.reminders import ReminderButton, ReminderService
from bot.discord_ui.replies import apologise, bound_acknowledgements, describe, reply
from bot.engine import Engine
from bot.observability import HealthServer

log = logging.getLogger(__name__)
OUT_OF_DATE = "This {what} is out of date. Use **/review** or **/learn** for a card."
CLOSE_GRACE_S = 30.0  # a closed client's start returns at once; this only bounds a stuck one


def intents() -> discord.Intents:
    """No privileged intents: slash commands, components and DMs need none of them."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.dm_messages = True  # code replies in a DM (their content needs no intent)
    wanted.guild_messages = True  # code replies that mention the bot
    return wanted


def use_endpoints(api_base_url: str, gateway_url: str) -> None:
    """Point discord.py at another REST base and gateway (a proxy, or an offline Discord)."""
    discord.http.Route.BASE = api_base_url.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


class TutorClient:
    """The tutor on a discord.py client; TutorBot and ShardedTutorBot pick the client."""
    def __init__(self, engine: Engine, *, dev_guild_id: int | None = None,
                 reminders: bool = False, metrics: tuple[str, int] | None = None,
                 web_url: str | None = None, **options):
        options.setdefault("max_ratelimit_timeout", 30.0)  # longer waits fail with a message
        # Deck text comes from strangers: no message pings unless it names whom (reminders).
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        super().__init__(intents=intents(), **options)
        guard_interactions(self._connection)  # a malformed interaction must not stop the bot
        self.handlers = CardHandlers(engine)
        self.community = Community(self.handlers, web_url)
        self.dev_guild_id = dev_guild_id
        self.reminders = ReminderService(self, engine) if reminders else None
        self.fit_job = FitJob(engine) if reminders else None
        self.metrics_address = metrics
        self.health = HealthServer(
            {"gateway": lambda: self.is_ready() and not self.is_closed(),
             "database": engine.database_ok}, latency=lambda: self.latency)
        self.tree = app_commands.CommandTree(self)
        # Every feature's commands and persistent components, registered here and only here.
        for command in [*cards.commands(self.handlers),
                        *me.commands(self.handlers, self.community),
                        *server.commands(self.handlers), *decks.commands(self.handlers),
                        *build_community_commands(self.community)]:
            self.tree.add_command(command)
        self.tree.on_error = self._on_command_error
        # The cards' own components are routed in on_interaction (components.route).
        self._dynamic_items = (me.ForgetButton, ReminderButton, BoardButton, ReviewCardButton,
                               MistakeButton)

    async def setup_hook(self) -> None:
        bound_acknowledgements()  # runs in the task that goes on to connect and dispatch
        self.add_dynamic_items(*self._dynamic_items)
        if self.reminders:
            self.reminders.start()
            self.fit_job.start()
        if self.metrics_address:
            await self.health.start(*self.metrics_address)
            log.info("serving /healthz and /metrics on %s:%d", *self.metrics_address)
        if self.dev_guild_id:
            guild = discord.Object(id=self.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to guild %s: %s", len(synced), self.dev_guild_id,
                     ", ".join(c.name for c in synced))
        else:
            synced = await self.tree.sync()
            log.info("synced %d global commands: %s", len(synced),
                     ", ".join(c.name for c in synced))

    async def close(self) -> None:
        if self.reminders:
            self.reminders.stop()
            self.fit_job.stop()
        await self.health.stop()
        await super().close()

    async def on_ready(self) -> None:
        # Everything loaded so far (decks, modules, the guild caches) lives as long as the
        # bot: out of the collector's sight, a full collection no longer walks it, which
        # stalled the event loop ~150 ms at a time under load (bench discord).
        gc.freeze()
        shards = getattr(self, "shard_ids", None) or [getattr(self, "shard_id", None)]
        log.info("ready as %s (id %s) in %d server(s), shard(s) %s", self.user, self.user.id,
                 len(self.guilds), shards)

    async def _on_command_error(self, interaction: discord.Interaction,
                                error: app_commands.AppCommandError) -> None:
        await apologise(interaction, getattr(error, "original", error))

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """Code modals and the cards' components are answered by custom_id, so one shown
        before a restart works. A component no handler knows (an old rendering, a forged
        id) is told so, never left without a reply. Their data is a dict with a str
        custom_id: guard_interactions sends any other to on_malformed_interaction."""
        modal = interaction.type is discord.InteractionType.modal_submit
        if not modal and interaction.type is not discord.InteractionType.component:
            return
        custom_id = interaction.data["custom_id"]
        if (call := route(interaction, custom_id)) is not None:
            await call
        elif modal or not any(re.fullmatch(item.__discord_ui_compiled_template__, custom_id)
                              for item in self._dynamic_items):
            await reply(interaction, OUT_OF_DATE.format(what="form" if modal else "button"))

    async def on_malformed_interaction(self, interaction: discord.Interaction) -> None:
        """A component or modal without a str custom_id (malformed.guard_interactions)."""
        log.warning("malformed interaction answered as out of date: %s data=%.200r",
                    describe(interaction), interaction.data)
        what = "form" if interaction.type is discord.InteractionType.modal_submit else "button"
        await reply(interaction, OUT_OF_DATE.format(what=what))

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or (message.guild and self.user not in message.mentions):
            return
        try:
            await self.handlers.on_code_message(message)
        except Exception:  # noqa: BLE001
            log.exception("code reply failed: message=%s author=%s", message.id,
                          message.author.id)


class TutorBot(TutorClient, discord.Client):
    """One gateway connection: enough for up to ~2,500 servers."""


class ShardedTutorBot(TutorClient, discord.AutoShardedClient):
    """Several shards in one process (discord.py's AutoShardedClient): Discord's shard
    count, or the one configured; with shard ids, this process runs only those shards."""


async def _serve(bot: discord.Client, token: str) -> None:
    """Serve until a signal. SIGINT (Ctrl-C) or SIGTERM (docker stop) closes the client:
    the gateway with code 1000, then discord.py's start returns and the bot exits. That
    close does not wait on this task's cancellation, which asyncio.run's own Ctrl-C handling
    relies on and Python 3.11 can lose (asyncio.wait_for swallows it when what it waits for
    has just finished): the bot then ran on until a second Ctrl-C. A second signal, or a
    client still running CLOSE_GRACE_S after its close (one closed while it was connecting
    can be), cancels the task."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()

    async def close() -> None:
        try:
            await bot.close()
        except Exception:  # noqa: BLE001 - the stop goes on: the grace below still ends it
            log.exception("closing the Discord client failed")
        await asyncio.sleep(CLOSE_GRACE_S)
        task.cancel()

    closing: list[asyncio.Task] = []

    def stop(number: signal.Signals) -> None:
        if closing:
            log.warning("%s again: stopping without waiting", number.name)
            task.cancel()
            return
        log.info("%s: closing the gateway and stopping", number.name)
        closing.append(asyncio.create_task(close()))

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop, number)
    async with bot:
        await bot.start(token)


def make_bot(engine: Engine, *, shard_count: int | None = None,
             shard_ids: list[int] | None = None, **options) -> discord.Client:
    """One connection, or several shards (a count, and which of them this process runs)."""
    if shard_count is None and not shard_ids:
        return TutorBot(engine, **options)
    if shard_count is not None:
        options["shard_count"] = shard_count
    if shard_ids:
        options["shard_ids"] = shard_ids
    return ShardedTutorBot(engine, **options)


def connect(bot: discord.Client, token: str) -> int:
    """Run the bot until SIGINT or SIGTERM stops it: 0, or 2 when Discord refuses the token.
    (discord.py's Client.run, without its logging set-up: the CLI configures logging.)"""
    try:
        asyncio.run(_serve(bot, token))
    except asyncio.CancelledError:  # a second signal: stopped without waiting for the close
        return 130
    except discord.LoginFailure:
        log.error("Discord rejected the token: check DISCORD_TOKEN (Developer Portal > Bot).")
        return 2
    except discord.PrivilegedIntentsRequired:  # pragma: no cover - we ask for none
        log.error("Discord refused the requested intents.")
        return 2
    return 0
