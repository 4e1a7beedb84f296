"""Log in with Discord end to end: the web companion's OAuth2 client against the offline
Discord's authorize, token and users/@me routes; what the session then allows."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.bench.offline_discord import MANAGE_GUILD, OfflineDiscord
from bot.web.app import make_app
from bot.web.oauth import OAuthApp
from tests.helpers.offline_discord import free_port
from tests.helpers.web import make_site


@pytest.fixture
async def discord_and_web(app):
    async with OfflineDiscord() as dc:
        port = free_port()
        callback = f"http://127.0.0.1:{port}/oauth/callback"
        registered = dc.oauth_app(redirect_uris=[callback])
        oauth = OAuthApp(registered["client_id"], registered["client_secret"], callback,
                         f"{dc.files_base}/oauth2/authorize", dc.api_base)
        server = TestServer(make_app(make_site(app.engine, oauth)), port=port)
        await server.start_server()
        try:
            yield dc, server
        finally:
            await server.close()


async def _log_in(dc, server, user, next_path="/") -> tuple[aiohttp.ClientSession, str]:
    browser = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    start = await browser.get(server.make_url(f"/login?next={next_path}"),
                              allow_redirects=False)
    assert start.status == 302
    # Logged in to Discord in this browser, then sent to authorize: Discord redirects back.
    landed = await browser.get(dc.oauth2.login_url(user, next=start.headers["Location"]))
    return browser, await landed.text()


async def test_a_discord_login_knows_who_manages_which_server(discord_and_web, app):
    dc, server = discord_and_web
    ada = dc.create_user("ada")
    club = dc.create_guild("Club", everyone_permissions=0)["id"]
    mine = dc.create_guild("Mine", everyone_permissions=0)["id"]
    unused = dc.create_guild("Quiet", everyone_permissions=0)["id"]
    dc.add_member(club, ada, permissions=0)
    dc.add_member(mine, ada, permissions=MANAGE_GUILD)
    dc.add_member(unused, ada, permissions=0)
    app.engine.servers.set_public_play(int(club), True)  # the bot was set up there
    browser, home = await _log_in(dc, server, ada)
    async with browser:
        assert "Hello, ada" in home
        assert f"/servers/{club}/leaderboard" in home and f"/servers/{club}/decks" not in home
        assert f"/servers/{mine}/decks" in home  # an admin's server, even before any use
        assert "Quiet" not in home  # a server that never used the bot
        denied = await browser.post(server.make_url(f"/servers/{club}/leaderboard/public"),
                                    data={"csrf": "guess", "public": "on"})
        assert denied.status == 403
        assert not app.engine.servers.settings(int(club)).board_public


async def test_logging_out_forgets_the_visitor(discord_and_web):
    dc, server = discord_and_web
    ada = dc.create_user("ada")
    browser, home = await _log_in(dc, server, ada)
    async with browser:
        csrf = home.split('name="csrf" value="')[1].split('"')[0]
        await browser.post(server.make_url("/logout"), data={"csrf": csrf})
        assert "Log in with Discord" in await (await browser.get(server.make_url("/"))).text()


async def test_a_code_discord_refuses_logs_no_one_in(discord_and_web):
    dc, server = discord_and_web
    browser = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    async with browser:
        start = await browser.get(server.make_url("/login"), allow_redirects=False)
        state = start.headers["Location"].split("state=")[1].split("&")[0]
        refused = await browser.get(server.make_url(f"/oauth/callback?code=forged&state={state}"))
        assert refused.status == 502 and "Log in again" in await refused.text()
        assert "Log in with Discord" in await (await browser.get(server.make_url("/"))).text()
