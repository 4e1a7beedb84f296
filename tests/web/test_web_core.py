"""The web companion's frame: who a visitor is, what a session may do, and the headers,
CSRF checks and escaping every page relies on; a server's leaderboard page."""

from __future__ import annotations

import asyncio
import re

import pytest

from bot.app import WebRefused, web_site
from bot.settings import WebSettings
from bot.web.sessions import COOKIE, Sessions
from tests.helpers.records import record
from tests.helpers.web import SECRET, log_in

GUILD, OTHER = 4242, 5151
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def test_a_session_cookie_is_signed_and_expires():
    now = [1_000_000.0]
    sessions = Sessions(SECRET, secure=False, clock=lambda: now[0], max_age=60)
    cookie = sessions.encode({"user": {"id": "1"}})
    assert sessions.decode(cookie) == {"user": {"id": "1"}}
    body, signature = cookie.split(".")
    forged = Sessions(b"x" * 32, secure=False, clock=lambda: now[0]).encode({"user": {"id": "2"}})
    assert sessions.decode(forged) == {}
    assert sessions.decode(body + "." + signature[::-1]) == {}
    assert sessions.decode("garbage") == {} and sessions.decode(None) == {}
    now[0] += 61
    assert sessions.decode(cookie) == {}
    with pytest.raises(ValueError):
        Sessions(b"short", secure=False)


async def test_every_page_has_the_security_headers(web):
    for path in ("/", "/no-such-page", "/login"):
        response = await web.get(path, allow_redirects=False)
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_login_keeps_a_state_and_refuses_a_callback_it_did_not_start(web):
    response = await web.get("/login?next=/me", allow_redirects=False)
    assert response.status == 302
    target = response.headers["Location"]
    state = re.search(r"state=([^&]+)", target)[1]
    assert "scope=identify+guilds" in target and "response_type=code" in target
    cookie = response.cookies[COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    refused = await web.get("/oauth/callback?code=c&state=forged", allow_redirects=False)
    assert refused.status == 400 and "not started here" in await refused.text()
    cancelled = await web.get(f"/oauth/callback?error=access_denied&state={state}")
    assert cancelled.status == 400 and "cancelled" in await cancelled.text()


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example", "/\\evil"])
async def test_after_login_only_a_path_of_this_site(web, site, target):
    response = await web.get(f"/login?next={target}", allow_redirects=False)
    assert site.sessions.decode(response.cookies[COOKIE].value)["next"] == "/"


async def test_a_post_without_the_session_token_changes_nothing(web, app):
    csrf = log_in(web, 1, guilds={GUILD: ("Club", True)})
    for form in ({}, {"csrf": "wrong"}, {"csrf": csrf, "public": "on"}):
        headers = {"Origin": "http://evil.example"} if form.get("csrf") == csrf else {}
        response = await web.post(f"/servers/{GUILD}/leaderboard/public", data=form,
                                  headers=headers, allow_redirects=False)
        assert response.status == 403, form
    assert not app.engine.servers.settings(GUILD).board_public
    allowed = await web.post(f"/servers/{GUILD}/leaderboard/public",
                             data={"csrf": csrf, "public": "on"}, allow_redirects=False)
    assert allowed.status == 303 and app.engine.servers.settings(GUILD).board_public


async def test_only_a_server_s_managers_may_make_its_board_public(web, app):
    csrf = log_in(web, 1, guilds={GUILD: ("Club", False), OTHER: ("Mine", True)})
    response = await web.post(f"/servers/{GUILD}/leaderboard/public",
                              data={"csrf": csrf, "public": "on"}, allow_redirects=False)
    assert response.status == 404 and not app.engine.servers.settings(GUILD).board_public


def _played(store, clock, name: str, guild_id: int, points: int, *, visible: bool = True):
    learner = store.learners.get_or_create(f"discord:{name}", display_name=name, now=clock())
    store.learners.update(learner.id, leaderboard_visible=visible)
    for i in range(points):
        store.record(record(learner.id, f"{name}-{i}", card_id=f"d/c{i}", guild_id=guild_id,
                            changes_schedule=False))
    return learner


async def test_a_private_board_is_for_members_and_a_public_one_for_anyone(web, app, store,
                                                                         clock):
    _played(store, clock, "ana", GUILD, 3)
    anonymous = await web.get(f"/servers/{GUILD}/leaderboard?period=season")
    assert anonymous.status == 404
    log_in(web, 9, guilds={OTHER: ("Elsewhere", True)})
    assert (await web.get(f"/servers/{GUILD}/leaderboard?period=season")).status == 404
    app.engine.servers.set_board_public(GUILD, True)
    web.session.cookie_jar.clear()
    shown = await web.get(f"/servers/{GUILD}/leaderboard?period=season")
    assert shown.status == 200 and "ana" in await shown.text()


async def test_the_board_hides_who_hid_and_escapes_names(web, store, clock):
    _played(store, clock, HOSTILE, GUILD, 3)
    _played(store, clock, "shy", GUILD, 5, visible=False)
    log_in(web, 1, guilds={GUILD: ("<b>Club</b>", False)})
    page = await (await web.get(f"/servers/{GUILD}/leaderboard?period=season")).text()
    assert "shy" not in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;Club" in page


async def test_local_mode_serves_the_terminal_s_learner_on_loopback_only(local_web, app):
    page = await (await local_web.get("/")).text()
    assert "ada" in page and "Log in with Discord" not in page
    assert (await local_web.get("/login", allow_redirects=False)).headers["Location"] == "/"
    with pytest.raises(WebRefused, match="loopback"):
        web_site(app, WebSettings(web_host="0.0.0.0"))
    with pytest.raises(WebRefused, match="WEB_SESSION_SECRET"):
        web_site(app, WebSettings(discord_client_id="1", discord_client_secret="s"))


def test_the_web_settings_hold_no_bot_token(monkeypatch):
    monkeypatch.setenv("DISCORD_TOKEN", "bot-token-123")
    assert "bot-token-123" not in repr(WebSettings().model_dump())
    assert not hasattr(WebSettings(), "discord_token")



async def test_a_board_is_read_for_every_visitor_and_each_sees_their_own_standing(
        web, site, app, store, clock):
    ticks = [0.0]
    site.rankings.monotonic = lambda: ticks[0]
    _played(store, clock, "ana", GUILD, 3)
    bo = _played(store, clock, "bo", GUILD, 1)
    reads, ranking = [], app.engine.boards.ranking
    app.engine.boards.ranking = lambda *a: reads.append(a) or ranking(*a)
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    page = await (await web.get(f"/servers/{GUILD}/leaderboard?period=season")).text()
    assert "ana" in page and "Counted just now" in page
    for i in range(1, 6):  # bo passes ana: on the board once its ranking is 30 s old
        store.record(record(bo.id, f"bo-{i}", card_id=f"d/c{i}", guild_id=GUILD,
                            changes_schedule=False))

    async def season_board():
        return await site.board(GUILD, app.engine.servers.settings(GUILD), "season", 1, bo, 25)

    ticks[0] = 29.0
    board, age = await season_board()
    assert len(reads) == 1 and age == 29 and [s.name for s in board.standings] == ["ana", "bo"]
    assert board.caller.rank == 2  # bo's own standing, in the ranking every visitor sees
    ticks[0] = 90.0  # shown at once as counted, while it is read again
    page = await (await web.get(f"/servers/{GUILD}/leaderboard?period=season")).text()
    assert "Counted 1 minute ago" in page
    assert page.index("<td>ana</td>") < page.index("<td>bo</td>")
    async with asyncio.timeout(60):  # until the read in the background is in
        while True:
            board, _ = await season_board()
            if [s.name for s in board.standings] == ["bo", "ana"]:
                break
            await asyncio.sleep(0.01)
    assert len(reads) == 2 and board.caller.rank == 1  # one read for all of them
    await web.get(f"/servers/{GUILD}/leaderboard?period=week")  # another period: its own
    assert len(reads) == 3
