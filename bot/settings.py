"""Settings from the environment or a `.env` file (never from the repo). Read by the
composition root (bot/app.py) and the command line only: the front ends, the engine and the
sandbox get plain values."""

from __future__ import annotations

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DISCORD_API = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg/"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8",
                                      extra="ignore")

    discord_token: SecretStr | None = None
    database_url: str = "sqlite:///tutor.db"
    discord_api_base_url: str = DISCORD_API
    discord_gateway_url: str = DISCORD_GATEWAY
    # Sync commands to this server only (instant) instead of globally (can take an hour).
    discord_dev_guild_id: int | None = None
    # Sharding (AutoShardedClient): the total count, and which shards this process runs
    # (e.g. DISCORD_SHARD_IDS=[0,1]). Unset: one connection.
    discord_shard_count: int | None = None
    discord_shard_ids: list[int] | None = None
    log_level: str = "INFO"
    log_format: str = "text"  # or "json": one object per line, for log shippers
    # /healthz and /metrics (Prometheus) on this local port; unset: not served.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # Judge code cards in the sandbox service (needs Linux namespaces; off: no code cards).
    sandbox: bool = True
    # Instead of a service of this process's own: a running `tutor sandbox serve` on this
    # machine (unix:/path), or a fleet of sandbox hosts behind Redis
    # (redis://tutor-bot:PASSWORD@host:6379/0, rediss:// for TLS).
    sandbox_address: str | None = None
    # `tutor sandbox serve` on a fleet host: the Redis it takes jobs from (as --broker).
    sandbox_broker: str | None = None
    # The operator's explicit opt-in to run code cards where no cgroup memory limit can be
    # set (neither cgroup v1 nor a delegated v2): only rlimits bound memory then, and
    # RLIMIT_DATA does not count shared mappings. Off: code cards are off on such hosts.
    sandbox_allow_unbounded_memory: bool = False
    # Sweep for due daily reminders every minute (one process per database, or PostgreSQL).
    reminders: bool = True
    # Where `tutor web` is served (/leaderboard links to its page); unset: no links.
    web_public_url: str | None = None

    @property
    def token(self) -> str | None:
        value = self.discord_token.get_secret_value().strip() if self.discord_token else ""
        return value or None


class WebSettings(BaseSettings):
    """`tutor web`'s settings. No bot token among them: the web process never reads one."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8",
                                      extra="ignore")

    database_url: str = "sqlite:///tutor.db"
    web_host: str = "127.0.0.1"
    web_port: int = 8080
    # Where browsers reach this site (the OAuth2 redirect is WEB_PUBLIC_URL/oauth/callback).
    web_public_url: str | None = None
    # The Discord application's OAuth2 client; unset: local mode (loopback only, the
    # terminal's learner).
    discord_client_id: str | None = None
    discord_client_secret: SecretStr | None = None
    # Signs the session cookies; every web process of a site shares it (at least 32 bytes).
    web_session_secret: SecretStr | None = None
    discord_api_base_url: str = DISCORD_API
    discord_authorize_url: str = "https://discord.com/oauth2/authorize"
    # Trying a deck's exercises runs them in the code sandbox, as the bot does.
    sandbox: bool = True
    sandbox_address: str | None = None
    sandbox_allow_unbounded_memory: bool = False
    log_level: str = "INFO"
    log_format: str = "text"
