"""`tutor sandbox acl`: the fleet's Redis ACL file, loaded into a real redis-server: each
user held to its part, the default user of no use to anyone, and an append-only log that
Redis replays whole (its transactions and scripts too) under that file."""

from __future__ import annotations

import socket

import pytest
import redis
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from bot.bench.local_redis import LocalRedis
from bot.sandbox.broker import ADMIT, BOT_USER, GROUP, HOST_USER, Keys
from tests.helpers.cli import tutor

JOBS = Keys().jobs("cpu")


@pytest.fixture
def printed_acl(monkeypatch):
    """A redis-server whose ACL file is the one `tutor sandbox acl` printed (append-only,
    as compose runs it)."""
    server = LocalRedis(appendonly=True)
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


def _raw(port: int, *commands: tuple[str, ...]) -> list[str]:
    """Each command's first reply line, on one plain connection that never logs in."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        replies = conn.makefile("rb")
        answers = []
        for command in commands:
            parts = [f"${len(part.encode())}\r\n{part}\r\n" for part in command]
            conn.sendall(f"*{len(command)}\r\n{''.join(parts)}".encode())
            answers.append(replies.readline().decode().strip())
        return answers


def test_no_one_can_be_the_default_user(printed_acl):
    """Off, with every permission (so that Redis replays its log whole): a connection that
    has not logged in may do nothing, and no password logs in as it."""
    logins = []
    for password in ("x", "nopass", "", printed_acl.bot_password, printed_acl.host_password):
        logins += [("AUTH", "default", password), ("HELLO", "3", "AUTH", "default", password),
                   ("AUTH", password)]
    commands = [("GET", "x"), ("SET", "x", "1"), ("ACL", "WHOAMI")]
    answers = _raw(printed_acl.port, *commands, *logins, *commands)
    assert [a.split()[0] for a in answers] == (["-NOAUTH"] * len(commands)
                                               + ["-WRONGPASS"] * len(logins)
                                               + ["-NOAUTH"] * len(commands)), answers


def test_an_append_only_restart_keeps_scripts_and_transactions(printed_acl):
    """Redis replays a MULTI/EXEC (which a script's writes are logged as) checking the default
    user's permissions: with a bare `user default off` it dropped them all (redis#14541)."""
    keys = Keys()
    with _client(printed_acl.bot_url) as bot:
        verdict = bot.eval(ADMIT, 3, keys.learner("l1"), keys.rate("l1"), keys.queue("cpu"),
                           "rid-1", 600_000, 6, 64, "learner")
        assert verdict == ["ok", 0]
    with _client(printed_acl.host_url) as host:
        host.set(keys.answered("rid-1"), "{}", px=600_000)
        with pytest.raises(NoPermissionError):  # the host needs no transaction
            host.execute_command("MULTI")
    printed_acl.restart(keep_data=True)
    with _client(printed_acl.bot_url) as bot:
        assert bot.get(keys.learner("l1")) == "rid-1"
        assert bot.zrange(keys.queue("cpu"), 0, -1) == ["rid-1"]
        assert bot.zcard(keys.rate("l1")) == 1
        with pytest.raises(NoPermissionError):  # the host's record is not the bot's
            bot.get(keys.answered("rid-1"))
    with _client(printed_acl.url(HOST_USER)) as host:
        assert host.get(keys.answered("rid-1")) == "{}"


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
