"""`tutor sandbox acl`: the fleet's Redis ACL file, loaded into a real redis-server."""

from __future__ import annotations

import pytest
import redis
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from bot.bench.local_redis import LocalRedis
from bot.sandbox.broker import BOT_USER, GROUP, Keys
from tests.helpers.cli import tutor

JOBS = Keys().jobs("cpu")


@pytest.fixture
def printed_acl(monkeypatch):
    """A redis-server whose ACL file is the one `tutor sandbox acl` printed."""
    server = LocalRedis()
    monkeypatch.setenv("REDIS_BOT_PASSWORD", server.bot_password)
    monkeypatch.setenv("REDIS_SANDBOX_PASSWORD", server.host_password)
    result = tutor("sandbox", "acl")
    assert result.returncode == 0, result.stderr
    (server.folder / "users.acl").write_text(result.stdout)
    with server:
        yield server


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=5)


def test_the_bots_user_adds_jobs_but_cannot_read_them(printed_acl):
    with _client(printed_acl.bot_url) as bot:
        assert bot.ping()
        bot.xadd(JOBS, {"rid": "r1"})
        with pytest.raises(NoPermissionError):
            bot.xrange(JOBS)
    with _client(printed_acl.host_url) as host:
        host.xgroup_create(JOBS, GROUP, id="0")
        [(_, entries)] = host.xreadgroup(GROUP, "host-1", {JOBS: ">"})
        assert [fields for _, fields in entries] == [{"rid": "r1"}]


def test_the_default_user_and_a_wrong_password_are_refused(printed_acl):
    address = f"redis://127.0.0.1:{printed_acl.port}/0"
    with _client(address) as anonymous, pytest.raises((AuthenticationError, ResponseError)):
        anonymous.xadd(JOBS, {"rid": "r2"})
    with _client(printed_acl.url(BOT_USER, "not-the-password")) as wrong, \
            pytest.raises(AuthenticationError):
        wrong.ping()


@pytest.mark.parametrize("bot, host", [(None, "secret"), ("secret", ""), ("two words", "x")])
def test_a_missing_or_spaced_password_exits_2_and_prints_no_file(monkeypatch, bot, host):
    for name, value in (("REDIS_BOT_PASSWORD", bot), ("REDIS_SANDBOX_PASSWORD", host)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    result = tutor("sandbox", "acl")
    assert result.returncode == 2 and result.stdout == ""
    assert "REDIS_" in result.stderr and "secret" not in result.stderr


def test_passwords_are_never_taken_from_the_command_line():
    result = tutor("sandbox", "acl", "--password", "secret")
    assert result.returncode == 2 and result.stdout == ""
