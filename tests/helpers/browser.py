"""A real browser for the web companion's tests: Debian's chromium, driven by Selenium
through Debian's chromedriver (installed by .ci/run), and `tutor web` in its own process
against the offline Discord. Without a browser the tests say so and skip; CI has one."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers.offline_discord import BotProcess, OfflineDiscord
from tests.helpers.paths import REPO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
NO_BROWSER = ("no browser: install Debian's chromium and chromium-driver "
              "(apt-get install chromium chromium-driver; .ci/run does)")
PHONE = (390, 844)  # a phone's CSS pixels
SCREENSHOTS = os.environ.get("SCREENSHOTS_DIR")  # set: the tests save each page's picture


def chrome(width: int = 1280, height: int = 900):
    """A headless chromium of this size (a new profile: no cookies); under 500 pixels wide
    (a window's minimum) a phone's screen, emulated."""
    if not (CHROMIUM and DRIVER):
        pytest.skip(NO_BROWSER)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}", "--disable-extensions"):
        options.add_argument(flag)
    if width < 500:
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": {
            "width": width, "height": height, "pixelRatio": 3.0, "touch": True}})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


def screenshot(driver, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))


async def launch_web(server: OfflineDiscord, tmp_path: Path, db_url: str, port: int,
                     client: dict, *, sandbox: bool = False) -> BotProcess:
    """`tutor web` (python -m bot web) logging in with the offline Discord's OAuth2 app."""
    log = tmp_path / "web.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "WEB_"))}
    env.update(DATABASE_URL=db_url, DISCORD_CLIENT_ID=client["client_id"],
               DISCORD_CLIENT_SECRET=client["client_secret"],
               WEB_SESSION_SECRET="a-test-secret-of-at-least-32-bytes!!",
               DISCORD_API_BASE_URL=server.api_base,
               DISCORD_AUTHORIZE_URL=f"{server.files_base}/oauth2/authorize",
               WEB_PUBLIC_URL=f"http://127.0.0.1:{port}", PYTHONPATH=str(REPO),
               PYTHONUNBUFFERED="1", LOG_LEVEL="INFO")
    args = ["--port", str(port)] + ([] if sandbox else ["--no-sandbox"])
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "web", *args, cwd=tmp_path, env=env, stdout=out,
            stderr=asyncio.subprocess.STDOUT)
    return BotProcess(proc, log)


def log_in_url(server: OfflineDiscord, user: dict, web_base: str, next_path: str = "/") -> str:
    """Logged in to Discord as `user` in this browser, then the site's own login."""
    return server.oauth2.login_url(user, next=f"{web_base}/login?next={next_path}")
