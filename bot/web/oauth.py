"""Log in with Discord: the OAuth2 authorization code flow with `state`, scopes
`identify` and `guilds`. The web front end learns who the visitor is and, per server, whether
they may manage it (Manage Server, Administrator or owner: who Discord lets change a server's
settings). No bot token is involved: the app's client id and secret only."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

import aiohttp

SCOPES = "identify guilds"
ADMINISTRATOR, MANAGE_GUILD = 1 << 3, 1 << 5


class LoginFailed(Exception):
    """Discord refused the code or did not answer: the visitor is told, and logs in again."""


@dataclass(frozen=True)
class OAuthApp:
    client_id: str
    client_secret: str
    redirect_uri: str  # this site's /oauth/callback, as registered with Discord
    authorize_url: str = "https://discord.com/oauth2/authorize"
    api_base: str = "https://discord.com/api/v10"


@dataclass(frozen=True)
class DiscordUser:
    id: str
    name: str
    guilds: dict[int, tuple[str, bool]]  # server id: its name, whether they manage it


def authorize_redirect(app: OAuthApp, state: str) -> str:
    return app.authorize_url + "?" + urlencode({
        "response_type": "code", "client_id": app.client_id, "scope": SCOPES,
        "state": state, "redirect_uri": app.redirect_uri, "prompt": "none"})


def manages(guild: dict) -> bool:
    try:
        permissions = int(guild.get("permissions") or 0)
    except (TypeError, ValueError):
        return False
    return bool(guild.get("owner")) or bool(permissions & (ADMINISTRATOR | MANAGE_GUILD))


async def user_of(app: OAuthApp, code: str, *, timeout: float = 10.0) -> DiscordUser:
    """Exchange the callback's code for a token, then read who it is and their servers."""
    limit = aiohttp.ClientTimeout(total=timeout)
    try:
        async with aiohttp.ClientSession(timeout=limit) as http:
            async with http.post(f"{app.api_base}/oauth2/token", data={
                    "grant_type": "authorization_code", "code": code,
                    "redirect_uri": app.redirect_uri, "client_id": app.client_id,
                    "client_secret": app.client_secret}) as reply:
                if reply.status != 200:
                    raise LoginFailed(f"the code was refused ({reply.status})")
                token = (await reply.json()).get("access_token")
            if not isinstance(token, str) or not token:
                raise LoginFailed("no access token came back")
            bearer = {"Authorization": f"Bearer {token}"}
            async with http.get(f"{app.api_base}/users/@me", headers=bearer) as reply:
                if reply.status != 200:
                    raise LoginFailed(f"who you are could not be read ({reply.status})")
                me = await reply.json()
            async with http.get(f"{app.api_base}/users/@me/guilds", headers=bearer) as reply:
                if reply.status != 200:
                    raise LoginFailed(f"your servers could not be read ({reply.status})")
                guilds = await reply.json()
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        raise LoginFailed(f"Discord did not answer ({type(error).__name__})") from None
    if not isinstance(me, dict) or not str(me.get("id", "")).isdigit() \
            or not isinstance(guilds, list):
        raise LoginFailed("Discord's answer was not understood")
    return DiscordUser(
        str(me["id"]), str(me.get("global_name") or me.get("username") or me["id"])[:100],
        {int(g["id"]): (str(g.get("name", ""))[:100], manages(g))
         for g in guilds if isinstance(g, dict) and str(g.get("id", "")).isdigit()})
