"""Offline Discord: a real REST + gateway server on 127.0.0.1 for an unmodified discord.py 2.7.1.

Unlike SimCord (which replaces discord.py's transport) this runs discord.py's own HTTP client,
rate limiting and websocket code; the bot may live in another process. Point it here with
`discord.http.Route.BASE = dc.api_base` and
`discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(dc.gateway_url)`, then:

    async with OfflineDiscord() as dc:          # start the bot, then
        await dc.wait_ready(); await dc.wait_commands()
        alice = dc.create_user("alice"); guild = dc.create_guild("G", members=[alice])
        rec = await dc.slash(alice, "ping", guild_id=guild["id"])   # -> InteractionRecord
        rec.callback_type, rec.content, rec.ephemeral, rec.components, rec.followups, rec.edits
        await dc.click(alice, rec.message, "ping:click")

Objects are Discord-shaped dicts with string snowflake ids. All REST calls land in `dc.requests`;
unknown routes get 404 `{"message": "404: Not Found", "code": 0}` (so gaps show); `fail_next()`
injects one error. Enforced like Discord: 3 s to ack (10062), one ack (40060), 2000 chars (50035).
Note: discord.py fires on_ready `guild_ready_timeout` (2 s) after READY; interactions work before.

A web front end logs in with OAuth2 (oauth2.py) against the same server:

        app = dc.oauth_app(client_id="1234", client_secret="s3cret", redirect_uris=[callback])
        gid = dc.create_guild("G", everyone_permissions=0)["id"]
        dc.add_member(gid, alice, permissions=MANAGE_GUILD)     # "Manage Server" here only
        browser.get(dc.oauth2.login_url(alice, next=dc.oauth2.authorize_url("1234", callback, st)))

The package: world.py holds the state (users, guilds, roles, channels, messages, commands),
gateway.py the websocket protocol, server.py the REST routes, the lifecycle and the calls that
drive the bot, records.py what it records, oauth2.py the OAuth2 endpoints.
"""

from bot.bench.offline_discord.server import NOT_FOUND, InteractionRecord, OfflineDiscord, Request
from bot.bench.offline_discord.world import (
    ADMINISTRATOR,
    ALL_PERMISSIONS,
    DISCORD_EPOCH_MS,
    EPHEMERAL,
    LOADING,
    MANAGE_GUILD,
)

__all__ = ["ADMINISTRATOR", "ALL_PERMISSIONS", "DISCORD_EPOCH_MS", "EPHEMERAL", "LOADING",
           "MANAGE_GUILD", "NOT_FOUND", "InteractionRecord", "OfflineDiscord", "Request"]
