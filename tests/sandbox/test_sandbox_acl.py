"""`tutor sandbox acl`: the fleet's Redis ACL file, loaded into a real redis-server: each
user held to its part (the bots' user runs no script of its own and can push jobs but never
read, remove or trim them), the default user of no use to anyone, and an append-only log
that Redis replays whole (its transactions and functions too) under that file."""

from __future__ import annotations

import socket
import time

import pytest
import redis
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from bot.bench.local_redis import LocalRedis
from bot.sandbox import broker_functions as functions
from bot.sandbox.broker import BOT_USER, GROUP, HEAD_MAX, HOST_USER, Keys, job_element
from tests.helpers.cli import tutor

KEYS = Keys()
JOBS, INBOX = KEYS.jobs("cpu"), KEYS.inbox("cpu")
FOREVER = "while true do end"


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


def _join(host: redis.Redis) -> None:
    """What a host does when it joins: the fleet's functions, the pool's groups."""
    host.execute_command("FUNCTION", "LOAD", functions.SOURCE)
    for trial in (False, True):
        host.xgroup_create(KEYS.jobs("cpu", trial), GROUP, id="0", mkstream=True)


def _take(host: redis.Redis, name: str = "host-1"):
    return host.fcall(functions.name("take"), 4, INBOX, KEYS.inbox("cpu", True), JOBS,
                      KEYS.jobs("cpu", True), GROUP, name, 1 << 20, HEAD_MAX, 0, 1)


def test_the_bots_user_pushes_jobs_but_cannot_read_them(printed_acl):
    with _client(printed_acl.host_url) as host:
        _join(host)
    with _client(printed_acl.bot_url) as bot:
        assert bot.ping()
        bot.rpush(INBOX, job_element("r1", "bot-1", "l1", 1, '{"code":"print(1)"}'))
        for reading in (lambda: bot.lrange(INBOX, 0, -1), lambda: bot.llen(INBOX),
                        lambda: bot.xrange(JOBS), lambda: _take(bot)):
            with pytest.raises(NoPermissionError):
                reading()
    with _client(printed_acl.host_url) as host:
        [stream, _, fields] = _take(host)
        assert stream == JOBS and fields[fields.index("request") + 1] == '{"code":"print(1)"}'


def test_the_bots_user_runs_no_script_of_its_own(printed_acl):
    """One endless loop would answer BUSY to every bot and host until Redis restarts (no
    user may kill it): no EVAL, no script loaded, no function of the bots' own."""
    library = f"#!lua name=loop\nredis.register_function('loop', function() {FOREVER} end)"
    with _client(printed_acl.bot_url) as bot:
        for attempt in (("EVAL", FOREVER, 0), ("EVAL_RO", FOREVER, 0),
                        ("SCRIPT", "LOAD", FOREVER), ("EVALSHA", "0" * 40, 0),
                        ("FUNCTION", "LOAD", library), ("FUNCTION", "FLUSH"),
                        ("FUNCTION", "DELETE", functions.LIBRARY), ("FUNCTION", "RESTORE", "x"),
                        ("SCRIPT", "FLUSH"), ("SCRIPT", "KILL"), ("FUNCTION", "KILL"),
                        ("CONFIG", "SET", "busy-reply-threshold", "1")):
            with pytest.raises(NoPermissionError):
                bot.execute_command(*attempt)
    with _client(printed_acl.host_url) as host:
        for attempt in (("EVAL", FOREVER, 0), ("SCRIPT", "LOAD", FOREVER)):
            with pytest.raises(NoPermissionError):
                host.execute_command(*attempt)
        started = time.monotonic()
        assert host.ping() and time.monotonic() - started < 5  # not BUSY


def test_the_bots_user_can_neither_empty_nor_trim_the_queue(printed_acl):
    """Pushing is all a bot may do to the jobs: the hosts take them, and trim their own."""
    with _client(printed_acl.host_url) as host:
        _join(host)
    element = job_element("r2", "bot-1", "l2", 1, '{"code":"print(2)"}')
    with _client(printed_acl.bot_url) as bot:
        bot.rpush(INBOX, element)
        for stream in (JOBS, KEYS.jobs("cpu", True)):
            for attempt in (("XADD", stream, "MAXLEN", "0", "*", "x", "y"),
                            ("XTRIM", stream, "MAXLEN", "0"), ("DEL", stream),
                            ("XDEL", stream, "0-1"), ("UNLINK", stream),
                            ("XGROUP", "DESTROY", stream, GROUP)):
                with pytest.raises(NoPermissionError):
                    bot.execute_command(*attempt)
        for inbox in (INBOX, KEYS.inbox("cpu", True), KEYS.inbox("cuda")):
            for attempt in (("LTRIM", inbox, "1", "0"), ("DEL", inbox), ("LPOP", inbox),
                            ("RPOP", inbox), ("LREM", inbox, "0", element),
                            ("LSET", inbox, "0", "x"), ("EXPIRE", inbox, "1"),
                            ("RENAME", inbox, KEYS.queue("cpu")), ("FLUSHALL",)):
                with pytest.raises(NoPermissionError):
                    bot.execute_command(*attempt)
        with pytest.raises(NoPermissionError):  # nor a key of its own beside the inboxes
            bot.rpush(KEYS.inbox("cpu") + ":mine", "x" * 1000)
    with _client(printed_acl.host_url) as host:  # the job is there, whole
        [_, _, fields] = _take(host)
        assert fields[fields.index("request") + 1] == '{"code":"print(2)"}'


def test_a_takeover_is_counted_before_the_request_is_read(printed_acl):
    """A job that kills each host that reads it: its third delivery comes without it."""
    with _client(printed_acl.host_url) as host:
        _join(host)
    with _client(printed_acl.bot_url) as bot:
        bot.rpush(INBOX, job_element("r3", "bot-1", "l3", 1, '{"code":"deadly"}'))
    with _client(printed_acl.host_url) as host:
        [_, entry_id, _] = _take(host, "host-1")
        seen = [host.fcall(functions.name("claim"), 1, JOBS, GROUP, f"host-{n}", 0, 2, "")
                for n in (2, 3)]
    assert [(found[0], found[1]) for found in seen] == [(entry_id, 2), (entry_id, 3)]
    assert "request" in seen[0][2] and "request" not in seen[1][2]
    assert "head" in seen[1][2]  # whose it is: it is answered as a crash


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


def test_an_append_only_restart_keeps_functions_and_transactions(printed_acl):
    """Redis replays a MULTI/EXEC (which a function's writes are logged as) checking the
    default user's permissions: with a bare `user default off` it dropped them all
    (redis#14541). The functions come back too: no host need load them again."""
    keys = KEYS
    with _client(printed_acl.host_url) as host:
        _join(host)
    with _client(printed_acl.bot_url) as bot:
        verdict, _ = bot.fcall(functions.name("admit"), 3, keys.learner("l1"),
                               keys.rate("l1"), keys.queue("cpu"),
                               "rid-1", 600_000, 6, 64, "learner")
        assert verdict == "ok"
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
        assert bot.fcall(functions.name("release"), 2, keys.learner("l1"),
                         keys.queue("cpu"), "rid-1") == 1
        assert bot.get(keys.learner("l1")) is None
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
