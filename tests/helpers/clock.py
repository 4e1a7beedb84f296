from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """Injected time: starts at noon UTC on a fixed day and moves only when told."""

    def __init__(self, start: datetime = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs) -> datetime:
        self.now += timedelta(**kwargs)
        return self.now


def store_now() -> datetime:
    """The moment every test's clock starts at."""
    return FakeClock()()
