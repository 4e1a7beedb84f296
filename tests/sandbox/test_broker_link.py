"""What an operator reads of the fleet's Redis: one line when it fails, one a minute while it
stays away, one when it is back, each saying what to check."""

from __future__ import annotations

import logging

from redis.exceptions import AuthenticationError, BusyLoadingError, NoPermissionError
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.sandbox.broker_link import REPEAT_S, BrokerLink, problem


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_failure_is_worded_for_the_operator():
    assert "Redis refused user tutor-bot" in problem(
        AuthenticationError("WRONGPASS invalid username-password pair"), "tutor-bot")
    assert "check REDIS_BOT_PASSWORD" in problem(AuthenticationError("x"), "tutor-bot")
    assert "check REDIS_SANDBOX_PASSWORD" in problem(AuthenticationError("x"), "tutor-sandbox")
    assert "ACL file is out of date" in problem(
        NoPermissionError("NOPERM this user has no permissions to run the 'xadd' command"),
        "tutor-bot")
    assert "loading its data" in problem(BusyLoadingError("LOADING"), "tutor-bot")
    assert problem(RedisConnectionError("Error 111 connecting"), None).startswith(
        "cannot reach Redis (ConnectionError: Error 111")


def test_one_line_down_one_a_minute_and_one_back(caplog):
    clock = Clock()
    link = BrokerLink("sandbox broker redis://tutor-bot@redis:6379", "tutor-bot",
                      logging.getLogger("test.link"), clock)
    caplog.set_level(logging.INFO, "test.link")
    assert link.up
    for errno in range(5):  # every retry fails, each with its own detail
        link.failed(RedisConnectionError(f"Error {111 + errno} connecting"))
        clock.now += 1
    assert not link.up and len(caplog.records) == 1
    assert caplog.records[0].levelname == "ERROR"
    clock.now += REPEAT_S
    link.failed(RedisConnectionError("Error 111 connecting"))
    assert len(caplog.records) == 2 and "still failing for 6" in caplog.records[1].message
    link.failed(AuthenticationError("WRONGPASS"))  # a new kind of problem is said at once
    assert len(caplog.records) == 3 and "refused user tutor-bot" in caplog.text
    link.ok()
    link.ok()
    assert link.up and link.problem is None
    assert len(caplog.records) == 4 and "Redis answers again (after 6" in caplog.text
