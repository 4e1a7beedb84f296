"""The web companion in a real browser (headless chromium), with `tutor run` and `tutor web`
each in its own process against the offline Discord: log in with Discord, answer a card in
Discord and see it in my progress, an admin writing a deck that Discord then serves, the
leaderboard made public, text from strangers shown as
text, another server refused, the pages at a phone's width and by keyboard alone."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
import pytest_asyncio

from bot.bench.offline_discord import MANAGE_GUILD
from scheduler.storage.db import sqlite_url
from tests.helpers.browser import PHONE, chrome, launch_web, log_in_url, screenshot
from tests.helpers.offline_discord import STARTUP_S, OfflineDiscord, free_port, launch_tutor
from tests.helpers.paths import COMMUNITY_DECK

pytestmark = [pytest.mark.timeout(300), pytest.mark.asyncio(loop_scope="module")]
HOSTILE = "<img src=x onerror=\"document.title='owned'\"><script>document.title='owned'</script>"


class Stack:
    """The offline Discord, the bot and the web companion, and who is in which server."""

    def __init__(self, server, bot, web, base):
        self.server, self.bot, self.web, self.base = server, bot, web, base


async def _up(url: str, web) -> None:
    """Until the web companion answers; a process that exited fails with its log."""
    async with aiohttp.ClientSession() as http, asyncio.timeout(STARTUP_S):
        while True:
            if web.proc.returncode is not None:
                pytest.fail(f"tutor web exited ({web.proc.returncode}):\n"
                            f"{web.log.read_text()}")
            try:
                async with http.get(url) as reply:
                    if reply.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web")
    server = await OfflineDiscord().start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    client = server.oauth_app(redirect_uris=[f"{base}/oauth/callback"])
    db_url = sqlite_url(tmp / "tutor.db")
    bot = await launch_tutor(server, tmp, db_url, free_port())
    web = await launch_web(server, tmp, db_url, port, client)
    try:
        await server.wait_ready(timeout=STARTUP_S)
        await server.wait_commands(timeout=STARTUP_S)
        await _up(f"{base}/healthz", web)
        yield Stack(server, bot, web, base)
    finally:
        await web.stop()
        await bot.stop()
        await server.stop()
    for process in (bot, web):
        assert "Traceback" not in process.log.read_text(), process.log.read_text()


@pytest.fixture
def people(stack):
    """A new learner `ada` in `Club` (a member) and `Home` (she manages it)."""
    dc = stack.server
    ada = dc.create_user("ada")
    club = dc.create_guild("Club", members=[], everyone_permissions=0)["id"]
    home = dc.create_guild("Home", members=[], everyone_permissions=0)["id"]
    dc.add_member(club, ada, permissions=0)
    dc.add_member(home, ada, permissions=MANAGE_GUILD)
    return ada, club, home


async def run(call, *args):
    """A Selenium call off the loop: the offline Discord on this loop answers the web
    process's OAuth2 requests meanwhile."""
    return await asyncio.to_thread(call, *args)


@pytest.fixture
async def browser():
    driver = await run(chrome)
    yield driver
    await run(driver.quit)


def submit(driver, selector: str) -> None:
    """Press this button and wait for the page it leads to (a condition, not a sleep): a
    new document, which has no mark of the old one, fully loaded. A look while the browser
    swaps documents can fail (chromedriver: "node does not belong to the document"): the
    wait looks again."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.wait import WebDriverWait

    driver.execute_script("window.__leaving = true")
    driver.find_element("css selector", selector).click()
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return !window.__leaving && document.readyState === 'complete'"))


def _text(driver) -> str:
    return driver.find_element("tag name", "main").text


def _live(message: dict, prefix: str) -> list[dict]:
    return [b for row in message.get("components", []) for b in row["components"]
            if b.get("custom_id", "").startswith(prefix) and not b.get("disabled")]


async def _play_one_card(dc, user, guild_id) -> None:
    """/learn, answered until the card is finished (a review on record): option after
    option, or each blank's next chip, submitted; at most the card's three tries."""
    card = await dc.slash(user, "learn", guild_id=guild_id, timeout=60)
    for attempt in range(3):
        options = _live(card.message, "srs:opt:")
        if options:
            await dc.click(user, card.message, options[0]["custom_id"], timeout=60)
        else:
            for pick in _live(card.message, "srs:pick:"):
                chips = pick["options"]
                await dc.select(user, card.message, pick["custom_id"],
                                [chips[attempt % len(chips)]["value"]], timeout=60)
            submit = _live(card.message, "srs:submit:")
            if not submit:
                return
            await dc.click(user, card.message, submit[0]["custom_id"], timeout=60)
        if not (_live(card.message, "srs:opt:") or _live(card.message, "srs:submit:")):
            return


async def test_log_in_play_in_discord_and_see_it_on_the_web(stack, people, browser):
    dc = stack.server
    ada, club, home = people
    await _play_one_card(dc, ada, club)
    await run(browser.get, log_in_url(dc, ada, stack.base))
    page = await run(_text, browser)
    assert "Hello, ada" in page and "Club" in page and "Home" in page
    screenshot(browser, "home")
    await run(browser.get, f"{stack.base}/me/{club}")
    progress = await run(_text, browser)
    assert "Reviews\n1\n" in progress and "Cards seen\n1 of" in progress, progress
    screenshot(browser, "progress")


async def test_a_public_board_and_a_hostile_name_shown_as_text(stack, people, browser):
    dc = stack.server
    ada, club, home = people
    mallory = dc.create_user(HOSTILE[:30])
    dc.add_member(home, mallory, permissions=0)
    await _play_one_card(dc, mallory, home)
    await run(browser.get, log_in_url(dc, ada, stack.base, f"/servers/{home}/leaderboard"))
    await run(lambda: browser.find_element("name", "public").click())
    await run(submit, browser, "#board-public button")
    anonymous = await run(chrome)
    try:
        await run(anonymous.get, f"{stack.base}/servers/{home}/leaderboard?period=season")
        board = await run(_text, anonymous)
        assert HOSTILE[:30] in board  # the name, as text
        assert await run(lambda: anonymous.title) != "owned"
        screenshot(anonymous, "leaderboard")
    finally:
        await run(anonymous.quit)


async def test_another_server_is_not_found_and_forms_need_this_site(stack, people, browser):
    dc = stack.server
    ada, club, home = people
    elsewhere = dc.create_guild("Elsewhere", everyone_permissions=0)["id"]
    await run(browser.get, log_in_url(dc, ada, stack.base))
    for path in (f"/servers/{elsewhere}/leaderboard", f"/servers/{elsewhere}/decks",
                 f"/me/{elsewhere}", f"/servers/{club}/decks"):
        await run(browser.get, stack.base + path)
        assert "Not found" in await run(lambda: browser.title), path


async def test_pages_fit_a_phone_and_work_by_keyboard(stack, people):
    dc = stack.server
    ada, club, home = people
    phone = await run(chrome, *PHONE)
    try:
        await run(phone.get, log_in_url(dc, ada, stack.base))
        for path in ("/", f"/me/{club}", f"/servers/{home}/leaderboard",
                     f"/servers/{home}/decks"):
            await run(phone.get, stack.base + path)
            width = await run(phone.execute_script,
                              "return document.documentElement.scrollWidth")
            assert width <= PHONE[0], (path, width)
        screenshot(phone, "decks-phone")
        # By keyboard: the skip link first, then on to the page's first link, and Enter.
        from selenium.webdriver.common.keys import Keys

        await run(phone.get, stack.base + "/")
        body = await run(phone.find_element, "tag name", "body")
        await run(body.send_keys, Keys.TAB)
        focused = await run(phone.execute_script, "return document.activeElement.textContent")
        assert focused.strip() == "Skip to content"
        await run(lambda: phone.switch_to.active_element.send_keys(Keys.ENTER))
        for _ in range(6):
            await run(lambda: phone.switch_to.active_element.send_keys(Keys.TAB))
            if await run(phone.execute_script, "return document.activeElement.textContent"
                         ) == "My progress":
                break
        await run(lambda: phone.switch_to.active_element.send_keys(Keys.ENTER))
        assert "/me/" in await run(lambda: phone.current_url)
    finally:
        await run(phone.quit)


def _problem_rows(driver) -> list[str]:
    return [row.text for row in driver.find_elements("css selector", "tr.problem")]


def _type(driver, text: str) -> None:
    editor = driver.find_element("id", "deck-text")
    editor.clear()
    driver.execute_script("arguments[0].value = arguments[1]", editor, text)


async def test_an_admin_writes_a_deck_and_discord_serves_it(stack, people, browser):
    dc = stack.server
    ada, club, home = people
    await run(browser.get, log_in_url(dc, ada, stack.base, f"/servers/{home}/decks/new"))
    broken = COMMUNITY_DECK.replace("type: multiple_choice", "type: multiple_choise", 1)
    line = broken.splitlines().index("    type: multiple_choise") + 1
    await run(_type, browser, broken)
    await run(submit, browser, "button[formaction$='/check']")
    rows = await run(_problem_rows, browser)
    number, text, problem = rows[0].split("\n", 2)  # the problem beside its line
    assert (number, text.strip()) == (str(line), "type: multiple_choise"), rows
    assert "multiple_choise" in problem and "multiple_choice" in problem
    assert "multiple_choise" in await run(
        lambda: browser.find_element("id", "deck-text").get_attribute("value"))  # kept
    screenshot(browser, "editor-problem")
    await run(_type, browser, COMMUNITY_DECK)
    await run(submit, browser, "button[formaction$='/check']")
    assert not await run(_problem_rows, browser)
    assert "What does x.to" in await run(_text, browser)  # the preview of its cards
    screenshot(browser, "editor-preview")
    await run(submit, browser, "button[formaction$='/try']")
    assert "no behaviour cards: there is nothing to try" in await run(_text, browser)
    await run(submit, browser, "button[formaction$='/publish']")
    assert "Tensor basics" in await run(_text, browser)
    screenshot(browser, "decks")
    # The bot looks for decks stored elsewhere at most every 30 s (bot/engine/deck_library).
    async with asyncio.timeout(120):
        while not (card := await dc.slash(ada, "practice", {"topic": "devices"},
                                          guild_id=home, timeout=60)).embeds:
            assert "No topic `devices`" in card.content, card.content
            await asyncio.sleep(1)
    assert "devices" in card.embeds[0]["title"]


async def test_a_hostile_deck_title_shows_as_text_and_runs_nothing(stack, people, browser):
    dc = stack.server
    ada, club, home = people
    hostile = COMMUNITY_DECK.replace("title: Tensor basics", f"title: {json.dumps(HOSTILE)}", 1) \
        .replace("tensor-basics", "hostile-basics")
    await run(browser.get, log_in_url(dc, ada, stack.base, f"/servers/{home}/decks/new"))
    await run(_type, browser, hostile)
    await run(submit, browser, "button[formaction$='/check']")
    await run(submit, browser, "button[formaction$='/publish']")
    for path in (f"/servers/{home}/decks", f"/servers/{home}/decks/hostile-basics/edit"):
        await run(browser.get, stack.base + path)
        page = await run(_text, browser)
        assert "<script>document.title='owned'</script>" in page, page
        assert await run(lambda: browser.title) != "owned"
        assert not await run(browser.find_elements, "css selector", "main img, main script")
