"""The composition root: the one place that builds the database, the store, the decks, the
code sandbox, the engine (`bot.engine.Engine`, once, with its code judge) and the front
ends, from Settings or explicit values, and takes them down again. `tutor run`, `tutor
practice`, `tutor deck ...`, the benchmarks and the tests' fixtures all build here; the front
ends get the Engine and plain arguments, no settings.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.engine import Engine
from bot.engine.code_judge import SandboxJudge
from bot.engine.tutor import Tutor
from bot.observability import FleetLook, poll_fleet
from bot.sandbox.broker import redacted
from bot.sandbox.client.background import BackgroundSandbox
from bot.sandbox.client.fleet import client_for
from bot.settings import DISCORD_API, DISCORD_GATEWAY, Settings, WebSettings
from content.loader import DeckLibrary
from scheduler.storage.db import make_engine, upgrade
from scheduler.storage.store import Store

if TYPE_CHECKING:
    import discord
    import sqlalchemy as sa

    from bot.terminal import Console

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def open_store(database_url: str) -> Store:
    """The database at this URL, migrated to the current schema, behind its Store."""
    engine = make_engine(database_url)
    upgrade(engine)
    return Store(engine)


@dataclass(frozen=True)
class CodeSandbox:
    """A started sandbox client (on its own loop thread) and the code judge on it."""

    background: BackgroundSandbox
    judge: SandboxJudge

    @property
    def client(self):
        return self.background.client

    @property
    def loop(self):
        return self.background.loop

    def stop(self) -> None:
        self.background.stop()


@dataclass(frozen=True)
class App:
    """What `build` made. `close()` (or leaving a `with` block) stops the sandbox and
    disposes the database engine."""

    engine: Engine
    store: Store
    sandbox: CodeSandbox | None = None

    @property
    def tutor(self) -> Tutor:
        """The engine's core (`Engine.tutor`)."""
        return self.engine.tutor

    @property
    def database(self) -> sa.Engine:
        return self.store.engine

    def close(self) -> None:
        if self.sandbox:
            self.sandbox.stop()
        self.store.close()  # its long-lived SQLite connection, before the engine goes
        self.database.dispose()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def discord_bot(self, settings: Settings) -> discord.Client:
        """The Discord front end on this tutor, as the settings configure it."""
        from bot.discord_ui.client import make_bot

        return make_bot(self.engine, dev_guild_id=settings.discord_dev_guild_id,
                        reminders=settings.reminders,
                        metrics=(settings.metrics_host, settings.metrics_port)
                        if settings.metrics_port else None,
                        shard_count=settings.discord_shard_count,
                        shard_ids=settings.discord_shard_ids,
                        web_url=settings.web_public_url)

    def console(self, name: str, deck_id: str | None = None, **options) -> Console:
        """The terminal front end for the local learner `name`."""
        from bot.terminal import Console

        learner = self.tutor.learner(f"local:{name}", display_name=name)
        return Console(self.engine, learner, deck_id, **options)


def build(settings: Settings | None = None, *, database_url: str | None = None,
          library: DeckLibrary | None = None, clock: Callable[[], datetime] | None = None,
          sandbox: bool | None = None) -> App:
    """The store (migrated), the decks (default: the bundled ones), the tutor on `clock`
    (default: UTC now) and, when `sandbox` is on, the code sandbox. What is not given comes
    from `settings`, read from the environment only when something is needed from it."""
    def setting(name: str):
        nonlocal settings
        if settings is None:
            settings = Settings()
        return getattr(settings, name)

    store = open_store(database_url or setting("database_url"))
    store.checkpoint_in_background()
    if library is None:  # before the sandbox starts: a broken deck file leaves nothing running
        library = DeckLibrary.load()
    if sandbox is None:
        sandbox = setting("sandbox")
    code = start_sandbox(setting("sandbox_address"), setting("sandbox_allow_unbounded_memory")) \
        if sandbox else None
    tutor = Tutor(store, library, clock=clock or utc_now, code_judge=code and code.judge)
    engine = Engine(tutor, store)
    return App(engine, store, code)


def start_sandbox(address: str | None = None, allow_unbounded_memory: bool = False,
                  **client_options) -> CodeSandbox | None:
    """Code cards are served only when their answers can be judged, under a memory limit
    (or the operator's explicit opt-in). The sandbox client lives on its own loop thread,
    so its I/O never waits on the gateway's loop. A fleet's Redis that does not answer yet
    is tried again in the background: code cards come on when it answers. `client_options`:
    the client's own (limits, timing, ...), for benchmarks."""
    sandbox = BackgroundSandbox(client_for(address, allow_unbounded_memory=allow_unbounded_memory,
                                           **client_options))
    try:
        sandbox.start()
    except Exception:  # noqa: BLE001
        log.exception("the code sandbox could not start: code cards are off")
        sandbox.stop()
        return None
    if not sandbox.info.runs_code:
        log.error("code cards are off: the sandbox has no memory limit on this host (run "
                  "`tutor sandbox doctor`; SANDBOX_ALLOW_UNBOUNDED_MEMORY=true accepts that)")
        sandbox.stop()
        return None
    judge = SandboxJudge(sandbox.client, sandbox.loop)
    if isinstance(sandbox.client, FleetLook):  # a fleet: its queue and hosts on /metrics
        sandbox.keep_running(poll_fleet(sandbox.client))
    if not judge.available:
        log.warning("code cards are off until the sandbox broker answers (%s)",
                    redacted(address))
    else:
        log.info("code sandbox ready (%s)",
                 redacted(address) if address else f"service pid {sandbox.client.service_pid}")
    return CodeSandbox(sandbox, judge)


def run(settings: Settings) -> int:
    """`tutor run`: connect to Discord (or whatever the endpoint settings point at)."""
    from bot.discord_ui.client import connect, use_endpoints

    if settings.discord_api_base_url != DISCORD_API or settings.discord_gateway_url != (
            DISCORD_GATEWAY):
        use_endpoints(settings.discord_api_base_url, settings.discord_gateway_url)
        log.info("using REST %s and gateway %s", settings.discord_api_base_url,
                 settings.discord_gateway_url)
    with build(settings) as app:
        bot = app.discord_bot(settings)
        # What start-up made (decks, schema, discord.py) lives as long as the process: out
        # of the collector's sight, a full collection no longer walks it on every click.
        gc.collect()
        gc.freeze()
        return connect(bot, settings.token)


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class WebRefused(ValueError):
    """The web settings cannot be served as they are (said to the operator)."""


def web_site(app: App, settings: WebSettings, *, local_name: str = "me"):
    """The web front end on this app's engine, as the settings configure it."""
    import secrets

    from bot.web.oauth import OAuthApp
    from bot.web.sessions import Sessions
    from bot.web.site import Site

    secret = settings.web_session_secret.get_secret_value().encode() \
        if settings.web_session_secret else b""
    public = (settings.web_public_url or
              f"http://{settings.web_host}:{settings.web_port}").rstrip("/")
    oauth = None
    if settings.discord_client_id:
        if not settings.discord_client_secret or len(secret) < 32:
            raise WebRefused("Log in with Discord needs DISCORD_CLIENT_SECRET and "
                             "WEB_SESSION_SECRET (32 characters or more).")
        oauth = OAuthApp(settings.discord_client_id,
                         settings.discord_client_secret.get_secret_value(),
                         f"{public}/oauth/callback", settings.discord_authorize_url,
                         settings.discord_api_base_url.rstrip("/"))
    elif settings.web_host not in LOOPBACK:
        raise WebRefused("Without DISCORD_CLIENT_ID the web pages show this computer's "
                         "learner: they are served on loopback only (WEB_HOST=127.0.0.1).")
    sessions = Sessions(secret if len(secret) >= 32 else secrets.token_bytes(32),
                        secure=public.startswith("https://"))
    return Site(app.engine, sessions, oauth, local_name=local_name)


def serve_web(settings: WebSettings, local_name: str) -> int:
    """`tutor web`: the web companion, until interrupted."""
    from aiohttp import web

    from bot.web.app import make_app

    with build(settings) as app:
        site = web_site(app, settings, local_name=local_name)
        log.info("web pages on http://%s:%s (%s)", settings.web_host, settings.web_port,
                 "log in with Discord" if site.oauth else f"local learner {local_name}")
        web.run_app(make_app(site), host=settings.web_host, port=settings.web_port,
                    print=None)
    return 0
