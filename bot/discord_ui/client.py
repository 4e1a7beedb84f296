"""The bot: a discord.py client with the tutor's commands and persistent components."""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Iterator

import discord
import yarl
from discord import app_commands

from bot.discord_ui import cards, decks, me, server
from bot.discord_ui.community import (
    BoardButton,
    Community,
    ReviewCardButton,
    build_community_commands,
)
from bot.discord_ui.components import CARD_ITEMS, MODAL_TEMPLATE, handled
from bot.discord_ui.flow import CardFlow
from bot.discord_ui.reminders import ReminderButton, ReminderService
from bot.discord_ui.replies import apologise, bound_acknowledgements, reply
from bot.engine.code_judge import SandboxJudge
from bot.engine.tutor import Tutor
from bot.observability import HealthServer
from bot.sandbox.background import BackgroundSandbox
from bot.sandbox.client import SandboxClient
from bot.settings import DISCORD_API, DISCORD_GATEWAY

log = logging.getLogger(__name__)


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
    def __init__(self, tutor: Tutor, *, dev_guild_id: int | None = None,
                 reminders: bool = False, metrics: tuple[str, int] | None = None, **options):
        options.setdefault("max_ratelimit_timeout", 30.0)  # longer waits fail with a message
        # Deck text comes from strangers: no message pings unless it names whom (reminders).
        options.setdefault("allowed_mentions", discord.AllowedMentions.none())
        super().__init__(intents=intents(), **options)
        self.flow = CardFlow(tutor)
        self.community = Community(self.flow)
        self.dev_guild_id = dev_guild_id
        self.reminders = ReminderService(self, self.flow.tutor) if reminders else None
        self.metrics_address = metrics
        self.health = HealthServer(
            {"gateway": lambda: self.is_ready() and not self.is_closed(),
             "database": tutor.database_ok}, latency=lambda: self.latency)
        self.tree = app_commands.CommandTree(self)
        # Every feature's commands and persistent components, registered here and only here.
        for command in [*cards.commands(self.flow), *me.commands(self.flow, self.community),
                        *server.commands(self.flow), *decks.commands(self.flow),
                        *build_community_commands(self.community)]:
            self.tree.add_command(command)
        self.tree.on_error = self._on_command_error
        self._dynamic_items = (*CARD_ITEMS, me.ForgetButton, ReminderButton, BoardButton,
                               ReviewCardButton)

    async def setup_hook(self) -> None:
        bound_acknowledgements()  # runs in the task that goes on to connect and dispatch
        self.add_dynamic_items(*self._dynamic_items)
        if self.reminders:
            self.reminders.start()
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
        """Code modals are answered by custom_id, so one opened before a restart works. A
        component no handler knows (an old rendering, a forged id) is told so, never left
        without a reply."""
        custom_id = (interaction.data or {}).get("custom_id", "")
        if interaction.type is discord.InteractionType.modal_submit:
            match = re.fullmatch(MODAL_TEMPLATE, custom_id)
            if match:
                code = next(_field_values(interaction.data, "code"), "")
                await handled(interaction, self.flow.on_code_modal(
                    interaction, match["serve"], int(match["attempt"]), code))
        elif interaction.type is discord.InteractionType.component and not any(
                re.fullmatch(item.__discord_ui_compiled_template__, custom_id)
                for item in self._dynamic_items):
            await reply(interaction, "This button is out of date. Use **/review** or "
                                     "**/learn** for a card.")

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or (message.guild and self.user not in message.mentions):
            return
        try:
            await self.flow.on_code_message(message)
        except Exception:  # noqa: BLE001
            log.exception("code reply failed: message=%s author=%s", message.id,
                          message.author.id)


class TutorBot(TutorClient, discord.Client):
    """One gateway connection: enough for up to ~2,500 servers."""


class ShardedTutorBot(TutorClient, discord.AutoShardedClient):
    """Several shards in one process (discord.py's AutoShardedClient): Discord's shard
    count, or the one configured; with shard ids, this process runs only those shards."""


def make_bot(tutor: Tutor, settings) -> discord.Client:
    options = {"dev_guild_id": settings.discord_dev_guild_id, "reminders": settings.reminders,
               "metrics": (settings.metrics_host, settings.metrics_port)
               if settings.metrics_port else None}
    if settings.discord_shard_count is None and not settings.discord_shard_ids:
        return TutorBot(tutor, **options)
    if settings.discord_shard_count is not None:
        options["shard_count"] = settings.discord_shard_count
    if settings.discord_shard_ids:
        options["shard_ids"] = settings.discord_shard_ids
    return ShardedTutorBot(tutor, **options)


def _field_values(node, custom_id: str) -> Iterator[str]:
    """Values of modal fields with this custom_id, wherever the layout nests them."""
    if isinstance(node, dict):
        if node.get("custom_id") == custom_id and "value" in node:
            yield node["value"]
        for child in node.values():
            yield from _field_values(child, custom_id)
    elif isinstance(node, list):
        for child in node:
            yield from _field_values(child, custom_id)


def run(settings) -> int:
    """`tutor run`: connect to Discord (or whatever the endpoint settings point at)."""
    from datetime import UTC, datetime

    from content.loader import DeckLibrary
    from scheduler.storage.db import make_engine, upgrade
    from scheduler.storage.store import Store

    if settings.discord_api_base_url != DISCORD_API or settings.discord_gateway_url != (
            DISCORD_GATEWAY):
        use_endpoints(settings.discord_api_base_url, settings.discord_gateway_url)
        log.info("using REST %s and gateway %s", settings.discord_api_base_url,
                 settings.discord_gateway_url)
    engine = make_engine(settings.database_url)
    upgrade(engine)
    tutor = Tutor(Store(engine), DeckLibrary.load(), clock=lambda: datetime.now(UTC))
    sandbox = start_sandbox(tutor, settings.sandbox_address,
                            settings.sandbox_allow_unbounded_memory) if settings.sandbox else None
    bot = make_bot(tutor, settings)
    try:
        bot.run(settings.token, log_handler=None)  # logging is configured by the CLI
    except discord.LoginFailure:
        log.error("Discord rejected the token: check DISCORD_TOKEN (Developer Portal > Bot).")
        return 2
    except discord.PrivilegedIntentsRequired:  # pragma: no cover - we ask for none
        log.error("Discord refused the requested intents.")
        return 2
    finally:
        if sandbox:
            sandbox.stop()
        engine.dispose()
    return 0


def start_sandbox(tutor: Tutor, address: str | None = None,
                  allow_unbounded_memory: bool = False) -> BackgroundSandbox | None:
    """Code cards are served only when their answers can be judged, under a memory limit
    (or the operator's explicit opt-in). The sandbox client lives on its own loop thread,
    so its I/O never waits on the gateway's loop."""
    sandbox = BackgroundSandbox(SandboxClient(address=address,
                                              allow_unbounded_memory=allow_unbounded_memory))
    try:
        sandbox.start()
    except Exception:  # noqa: BLE001
        log.exception("the code sandbox could not start: code cards are off")
        sandbox.stop()
        return None
    if not sandbox.info.get("runs_code", True):
        log.error("code cards are off: the sandbox has no memory limit on this host (run "
                  "`tutor sandbox doctor`; SANDBOX_ALLOW_UNBOUNDED_MEMORY=true accepts that)")
        sandbox.stop()
        return None
    tutor.code_judge = SandboxJudge(sandbox.client, sandbox.loop)
    log.info("code sandbox ready (%s)", address or f"worker pid {sandbox.client.service_pid}")
    return sandbox
