"""The offline Discord's OAuth2 (bot/bench/offline_discord/oauth2.py): a web front end's "Log in
with Discord", driven as a browser would, with a cookie-keeping aiohttp session."""

from __future__ import annotations

import base64

import aiohttp
import pytest
import pytest_asyncio
from yarl import URL

from bot.bench.offline_discord import MANAGE_GUILD, OfflineDiscord

pytestmark = pytest.mark.asyncio

CALLBACK = "http://127.0.0.1:1/auth/callback"  # the web front end's; never fetched
STATE = "st4te-xyz"
SEND_MESSAGES = 1 << 11


@pytest_asyncio.fixture
async def dc():
    async with OfflineDiscord() as server:
        yield server


@pytest_asyncio.fixture
async def browser():
    # unsafe=True: aiohttp's jar keeps no cookies for IP addresses (127.0.0.1) otherwise
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


@pytest.fixture
def world(dc):
    """Ann manages "Study Group" (a role with Manage Server) and is a plain member of "Other";
    she owns "Hers"; Bob is in none of them. The web app is registered."""
    ann, bob = dc.create_user("ann"), dc.create_user("bob")
    study = dc.create_guild("Study Group", everyone_permissions=SEND_MESSAGES)
    dc.add_member(study["id"], ann, permissions=MANAGE_GUILD)
    other = dc.create_guild("Other", everyone_permissions=SEND_MESSAGES)
    dc.add_member(other["id"], ann)
    hers = dc.create_guild("Hers", everyone_permissions=0, owner=ann)
    app = dc.oauth_app(client_id="1234", client_secret="s3cret", redirect_uris=[CALLBACK])
    return {"ann": ann, "bob": bob, "study": study, "other": other, "hers": hers, "app": app}


async def code_for(dc, browser, user, scope="identify guilds", state=STATE) -> str:
    """Log in, open the consent page, Authorize: the code the redirect carries."""
    url = dc.oauth2.authorize_url("1234", CALLBACK, state, scope=scope)
    async with browser.get(dc.oauth2.login_url(user, next=url)) as page:
        assert page.status == 200, await page.text()
        form = await page.text()
    assert "Authorize" in form and "Cancel" in form and 'method="post"' in form
    assert all(s in form for s in scope.split())
    async with browser.post(f"{dc.files_base}/oauth2/authorize", allow_redirects=False,
                            data={**dict(URL(url).query), "decision": "authorize"}) as done:
        assert done.status == 302
        back = URL(done.headers["Location"])
    assert str(back.with_query(None)) == CALLBACK and back.query["state"] == state
    return back.query["code"]


def basic(client_id: str, secret: str) -> dict:
    """The client's credentials by HTTP Basic, as many OAuth2 libraries send them."""
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


async def exchange(dc, code, client_id="1234", secret="s3cret", redirect_uri=CALLBACK,
                   headers=None):
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if headers is None:
        form |= {"client_id": client_id, "client_secret": secret}
    async with aiohttp.ClientSession() as http, http.post(
            f"{dc.api_base}/oauth2/token", data=form, headers=headers) as resp:
        return resp.status, await resp.json()


async def api(dc, path, authorization):
    async with aiohttp.ClientSession() as http, http.get(
            f"{dc.api_base}{path}", headers={"Authorization": authorization}) as resp:
        return resp.status, await resp.json()


async def test_the_whole_flow_gives_the_user_and_their_permissions_per_guild(dc, browser, world):
    code = await code_for(dc, browser, world["ann"])
    status, token = await exchange(dc, code)
    assert status == 200, token
    assert token["token_type"] == "Bearer" and token["expires_in"] == 604800
    assert token["scope"] == "identify guilds" and token["access_token"] and token["refresh_token"]
    bearer = f"Bearer {token['access_token']}"

    status, me = await api(dc, "/users/@me", bearer)
    assert status == 200
    assert {k: me[k] for k in ("id", "username", "global_name", "avatar", "discriminator")} == {
        "id": world["ann"]["id"], "username": "ann", "global_name": "ann", "avatar": None,
        "discriminator": "0"}

    status, guilds = await api(dc, "/users/@me/guilds", bearer)
    assert status == 200
    by_name = {g["name"]: g for g in guilds}
    assert set(by_name) == {"Study Group", "Other", "Hers"}
    assert set(by_name["Other"]) == {"id", "name", "icon", "owner", "permissions", "features"}
    study, other, hers = by_name["Study Group"], by_name["Other"], by_name["Hers"]
    assert isinstance(study["permissions"], str)
    assert int(study["permissions"]) == MANAGE_GUILD | SEND_MESSAGES and not study["owner"]
    assert int(other["permissions"]) == SEND_MESSAGES and not int(other["permissions"]) & 0x20
    assert hers["owner"] and int(hers["permissions"]) & MANAGE_GUILD
    assert study["id"] == world["study"]["id"] and study["features"] == []


async def test_the_bot_sees_the_same_permissions_in_an_interaction(dc, world):
    ann, study, other = world["ann"], world["study"]["id"], world["other"]["id"]
    assert int(dc._member(ann, study)["permissions"]) & MANAGE_GUILD
    assert not int(dc._member(ann, other)["permissions"]) & MANAGE_GUILD
    admin = dc.create_role(other, "Admins", permissions=1 << 3)  # ADMINISTRATOR: everything
    dc.add_member(other, ann, roles=[admin])
    assert dc.permissions(other, ann["id"]) == int(dc._member(ann, other)["permissions"])
    assert dc.permissions(other, ann["id"]) & MANAGE_GUILD


async def test_cancel_redirects_with_access_denied(dc, browser, world):
    url = dc.oauth2.authorize_url("1234", CALLBACK, STATE)
    async with browser.get(dc.oauth2.login_url(world["ann"], next=url)) as page:
        assert page.status == 200
    async with browser.post(f"{dc.files_base}/oauth2/authorize", allow_redirects=False,
                            data={**dict(URL(url).query), "decision": "cancel"}) as resp:
        assert resp.status == 302
        back = URL(resp.headers["Location"])
    assert back.query["error"] == "access_denied" and back.query["state"] == STATE
    assert "code" not in back.query and not dc.oauth2.codes


async def test_bad_authorize_requests(dc, browser, world):
    await browser.get(dc.oauth2.login_url(world["ann"]), allow_redirects=False)
    base = dc.oauth2.authorize_url("1234", CALLBACK, STATE)
    cases = [  # (change to the query, status, error in the redirect or None: an error page)
        ({"redirect_uri": "http://evil.example/cb"}, 400, None),
        ({"redirect_uri": CALLBACK + "/"}, 400, None),  # registered URIs match exactly
        ({"client_id": "999"}, 400, None),
        ({"scope": "identify email"}, 302, "invalid_scope"),
        ({"response_type": "token"}, 302, "unsupported_response_type"),
    ]
    for change, status, error in cases:
        async with browser.get(URL(base).update_query(change), allow_redirects=False) as resp:
            assert resp.status == status, change
            if error is None:
                assert "Location" not in resp.headers and "text/html" in resp.content_type
            else:
                back = URL(resp.headers["Location"])
                assert back.query["error"] == error and back.query["state"] == STATE
                assert str(back.with_query(None)) == CALLBACK
    async with browser.post(f"{dc.files_base}/oauth2/authorize", allow_redirects=False, data={
            **dict(URL(base).query), "redirect_uri": "http://evil.example/cb",
            "decision": "authorize"}) as resp:
        assert resp.status == 400 and "Location" not in resp.headers
    assert not dc.oauth2.codes


async def test_not_logged_in_is_asked_to_log_in_first(dc, browser, world):
    async with browser.get(dc.oauth2.authorize_url("1234", CALLBACK, STATE),
                           allow_redirects=False) as resp:
        assert resp.status == 401 and "log in" in (await resp.text()).lower()
    await browser.get(dc.oauth2.login_url(world["ann"]), allow_redirects=False)
    await browser.get(f"{dc.files_base}/offline/logout", allow_redirects=False)
    async with browser.get(dc.oauth2.authorize_url("1234", CALLBACK, STATE),
                           allow_redirects=False) as resp:
        assert resp.status == 401


async def test_prompt_none_with_a_logged_in_browser_approves_at_once(dc, browser, world):
    await browser.get(dc.oauth2.login_url(world["bob"]), allow_redirects=False)
    url = dc.oauth2.authorize_url("1234", CALLBACK, STATE, scope="identify", prompt="none")
    async with browser.get(url, allow_redirects=False) as resp:
        assert resp.status == 302
        back = URL(resp.headers["Location"])
    assert back.query["state"] == STATE
    status, token = await exchange(dc, back.query["code"])
    assert status == 200 and token["scope"] == "identify"
    status, me = await api(dc, "/users/@me", f"Bearer {token['access_token']}")
    assert status == 200 and me["id"] == world["bob"]["id"]
    # without the guilds scope: Missing Access
    assert await api(dc, "/users/@me/guilds", f"Bearer {token['access_token']}") == (
        403, {"message": "Missing Access", "code": 50001})


async def test_codes_are_single_use_bound_and_expire(dc, browser, world):
    code = await code_for(dc, browser, world["ann"])
    assert (await exchange(dc, code, redirect_uri="http://127.0.0.1:1/other"))[0] == 400
    code = await code_for(dc, browser, world["ann"])  # that one was spent by the mismatch
    status, token = await exchange(dc, code)
    assert status == 200
    assert await exchange(dc, code) == (400, {"error": "invalid_grant"})
    # presenting a code twice revokes the token it bought (RFC 6749 4.1.2)
    assert (await api(dc, "/users/@me", f"Bearer {token['access_token']}"))[0] == 401

    now = [0.0]
    dc.oauth2.clock = lambda: now[0]
    code = await code_for(dc, browser, world["ann"])
    now[0] += 601  # codes live 10 minutes
    assert await exchange(dc, code) == (400, {"error": "invalid_grant"})
    assert await exchange(dc, "made-up") == (400, {"error": "invalid_grant"})

    other = dc.oauth_app(client_id="5678", client_secret="x", redirect_uris=[CALLBACK])
    code = await code_for(dc, browser, world["ann"])
    assert await exchange(dc, code, client_id=other["client_id"], secret="x") == (
        400, {"error": "invalid_grant"})  # issued to 1234


async def test_client_credentials(dc, browser, world):
    code = await code_for(dc, browser, world["ann"])
    assert await exchange(dc, code, secret="wrong") == (401, {"error": "invalid_client"})
    assert await exchange(dc, code, client_id="999") == (401, {"error": "invalid_client"})
    assert await exchange(dc, code, headers=basic("1234", "wrong")) == (
        401, {"error": "invalid_client"})
    status, token = await exchange(dc, code, headers=basic("1234", "s3cret"))
    assert status == 200, token  # the failed tries did not spend the code

    async with aiohttp.ClientSession() as http, http.post(f"{dc.api_base}/oauth2/token", data={
            "grant_type": "refresh_token", "refresh_token": token["refresh_token"],
            "client_id": "1234", "client_secret": "s3cret"}) as resp:
        assert resp.status == 200
        fresh = await resp.json()
    assert (await api(dc, "/users/@me", f"Bearer {token['access_token']}"))[0] == 401
    assert (await api(dc, "/users/@me", f"Bearer {fresh['access_token']}"))[0] == 200


async def test_bearer_and_bot_tokens_do_not_mix(dc, browser, world):
    code = await code_for(dc, browser, world["ann"])
    bearer = f"Bearer {(await exchange(dc, code))[1]['access_token']}"
    # the bot's token keeps the bot's view (discord.py's login reads /users/@me)
    status, me = await api(dc, "/users/@me", "Bot offline-token")
    assert status == 200 and me["id"] == dc.bot_user_id and me["bot"]
    status, guilds = await api(dc, "/users/@me/guilds", "Bot offline-token")
    assert status == 200 and {g["name"] for g in guilds} == {"Study Group", "Other", "Hers"}
    assert all(not g["owner"] for g in guilds)
    # a user's token reaches none of the bot's API
    channel = dc.guilds[world["study"]["id"]]["channels"][0]["id"]
    unauthorized = (401, {"message": "401: Unauthorized", "code": 0})
    assert await api(dc, f"/channels/{channel}", bearer) == unauthorized
    assert await api(dc, "/oauth2/applications/@me", bearer) == unauthorized
    assert await api(dc, "/users/@me", "Bearer not-a-token") == unauthorized
    assert await api(dc, "/users/@me/guilds", "Bearer ") == unauthorized
    assert (await api(dc, "/users/@me", bearer))[1]["id"] == world["ann"]["id"]
