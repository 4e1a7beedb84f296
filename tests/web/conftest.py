"""The web companion on a fresh database, served by aiohttp's test server: `web` is a
client for a visitor; `tests.helpers.web.log_in` logs one in; local mode is `local_web`."""

from __future__ import annotations

import pytest

from bot.web.security import RateLimits
from tests.helpers.web import client_for, make_site


@pytest.fixture
async def site(app):
    return make_site(app.engine, limits=RateLimits())


@pytest.fixture
async def web(site):
    client = await client_for(site)
    yield client
    await client.close()


@pytest.fixture
async def local_web(app):
    client = await client_for(make_site(app.engine, oauth=None, local_name="ada"))
    yield client
    await client.close()
