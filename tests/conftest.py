from __future__ import annotations

import os

import pytest

from bot.app import App, build
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary
from scheduler.storage.db import sqlite_url, throwaway_database
from scheduler.storage.store import Store
from tests.helpers.clock import FakeClock
from tests.helpers.paths import FIXTURES


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_url(tmp_path) -> str:
    """A fresh database per test: a SQLite file, or with TEST_POSTGRES_URL set (a server's
    admin URL), a new PostgreSQL database dropped afterwards."""
    admin_url = os.environ.get("TEST_POSTGRES_URL")
    if not admin_url:
        yield sqlite_url(tmp_path / "tutor.db")
        return
    with throwaway_database(admin_url, "tutor_test") as url:
        yield url


@pytest.fixture(scope="session")
def mini_library() -> DeckLibrary:
    return DeckLibrary.load([FIXTURES / "mini.yaml"])


@pytest.fixture
def deck_library(mini_library) -> DeckLibrary:
    """The decks the `tutor` fixture plays (tests/discord: the bundled ones)."""
    return mini_library


@pytest.fixture
def app(db_url, deck_library, clock) -> App:
    """The tutor on a fresh database, built as `tutor run` builds it, without a sandbox."""
    with build(database_url=db_url, library=deck_library, clock=clock, sandbox=False) as built:
        yield built


@pytest.fixture
def engine(app):
    """The database's SQLAlchemy engine (the tutor's engine is `app.engine`)."""
    return app.database


@pytest.fixture
def store(app) -> Store:
    return app.store


@pytest.fixture
def tutor(app) -> Tutor:
    return app.tutor


@pytest.fixture(scope="module")
def sandbox_judge():
    """The engine's code judge on a real sandbox service of its own (one per module)."""
    from bot.engine.code_judge import SandboxJudge
    from bot.sandbox.client.background import BackgroundSandbox

    sandbox = BackgroundSandbox()
    sandbox.start()
    yield SandboxJudge(sandbox.client, sandbox.loop)
    sandbox.stop()


# How long SimCord waits for the bot to settle after an event: a bound for a hung bot, not
# a timing. Its 5 s default was passed by a whole-deck upload on the 2-core box with other
# suites running (the wait ends as soon as the bot settles).
SIMCORD_SETTLE_S = 60


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "simcord_env" in getattr(item, "fixturenames", ()):
            marker = item.get_closest_marker("simcord")
            item.add_marker(pytest.mark.simcord(
                **{"settle_timeout": SIMCORD_SETTLE_S, **(marker.kwargs if marker else {})}))
    if os.environ.get("TEST_POSTGRES_URL"):
        skip = pytest.mark.skip(reason="SQLite specifics; this run is against PostgreSQL")
        for item in items:
            if "sqlite_only" in item.keywords:
                item.add_marker(skip)
