from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.tutor import Tutor
from content.loader import DeckLibrary
from scheduler.db import make_engine, sqlite_url, upgrade
from scheduler.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]


class FakeClock:
    """Injected time: starts at noon UTC on a fixed day and moves only when told."""

    def __init__(self, start: datetime = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs) -> datetime:
        self.now += timedelta(**kwargs)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_url(tmp_path) -> str:
    return sqlite_url(tmp_path / "tutor.db")


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def store(engine) -> Store:
    return Store(engine)


@pytest.fixture(scope="session")
def mini_library() -> DeckLibrary:
    return DeckLibrary.load([FIXTURES / "mini.yaml"])


@pytest.fixture
def tutor(store, mini_library, clock) -> Tutor:
    return Tutor(store, mini_library, clock=clock)
