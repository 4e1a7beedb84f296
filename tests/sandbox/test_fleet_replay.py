"""Each run runs once, whatever Redis replays or forgets: a Redis restarted from its
append-only log (with the project's ACL file, and with the bare `user default off` that
makes Redis 7.0 drop every MULTI/EXEC from its log, redis#14541), a job whose answer is on
record coming back, a run sent again while its host still runs it, and a host whose password
Redis refuses. Real redis-server, real host processes; every wait is on a condition."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from bot.bench.local_redis import LocalRedis
from bot.sandbox.broker import GROUP, HOST_USER, Keys, job_element, job_request
from bot.sandbox.protocol import OK
from tests.helpers.fleet import (
    FLEET,
    Host,
    admin,
    client_timing,
    fleet_client,
    wait_for_hosts,
)
from tests.helpers.sandbox import TEST_LIMITS, sleeping_child, wait_until

KEYS = Keys()
JOBS = KEYS.jobs("cpu")
LONG_SLEEPER = "import time\ntime.sleep(5)\nprint('awake')\n"
BARE_DEFAULT = "user default off"  # what the ACL file said before: Redis 7.0 drops EXECs


async def condition(check, timeout_s: float = 120.0, what: str = "condition"):
    """Await `check()` until it is truthy, within a generous deadline (a busy 2-core CI)."""
    deadline = time.monotonic() + timeout_s
    while not (value := await check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)
    return value


async def look(redis: LocalRedis, *commands):
    """One admin command's answer (the operator's user, who may see everything)."""
    client = await admin(redis)
    try:
        return await client.execute_command(*commands)
    finally:
        await client.aclose()


async def reclaims(redis: LocalRedis) -> int:
    return int(await look(redis, "GET", KEYS.reclaims("cpu")) or 0)


async def queue_empty(redis: LocalRedis) -> bool:
    """No job left in the pool's stream, none pending with any host."""
    if await look(redis, "XLEN", JOBS):
        return False
    groups = await look(redis, "XINFO", "GROUPS", JOBS)
    return all(int(group["pending"]) == 0 for group in groups)


async def host_report(client, name: str | None = None) -> dict:
    reports = (await client.hosts(fresh=True))["cpu"]
    return reports[name] if name else next(iter(reports.values()), {})


async def beat_since(client, name: str, since_ms: int) -> bool:
    """Whether the host has reported since `since_ms` (Redis's clock, the same host's)."""
    return (await host_report(client, name)).get("seen_ms", 0) > since_ms


async def runs_reported(client, name: str, runs: int) -> bool:
    """Whether the host's report (a beat every half second) counts `runs` runs."""
    return (await host_report(client, name)).get("runs") == runs


@pytest.fixture
def replayed():
    """An append-only Redis; `default_user` rewrites the ACL file's first line."""
    servers = []

    def make(default_user: str | None = None) -> LocalRedis:
        server = LocalRedis(appendonly=True)
        if default_user is not None:
            acl = server.folder / "users.acl"
            lines = acl.read_text().splitlines(keepends=True)
            assert lines[0].startswith("user default off")
            acl.write_text(default_user + "\n" + "".join(lines[1:]))
        servers.append(server.start())
        return server

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def hosts():
    started: list[Host] = []
    yield started
    for host in started:
        host.stop()


@pytest.mark.parametrize("default_user", [None, BARE_DEFAULT], ids=["generated", "bare"])
async def test_runs_answered_before_a_restart_are_not_run_again(replayed, hosts,
                                                                 default_user):
    redis = replayed(default_user)
    hosts.append(Host(redis, parallel=2))
    client = await fleet_client(redis)
    try:
        [name] = await wait_for_hosts(client, 1)
        results = await asyncio.gather(*(client.run(f"print({i})", learner=f"burst-{i}")
                                         for i in range(20)))
        assert [(r.status, r.stdout) for r in results] == [(OK, f"{i}\n")
                                                           for i in range(20)]
        await condition(lambda: runs_reported(client, name, 20), what="the host's count")
        epoch = await look(redis, "GET", KEYS.epoch)
        await asyncio.to_thread(redis.restart, keep_data=True)
        assert await look(redis, "GET", KEYS.epoch) == epoch  # the log was replayed
        restarted_ms = int(time.time() * 1000)
        # A job brought back would be taken over once idle for claim_idle_s: wait until
        # the host has looked for orphans well past that, and the queue is empty.
        claimable_ms = restarted_ms + int(2 * FLEET["claim_idle_s"] * 1000)

        async def settled() -> bool:
            return await beat_since(client, name, claimable_ms) and await queue_empty(redis)

        await condition(settled, what="the host beating past the takeover time")
        assert (await host_report(client, name))["runs"] == 20
        assert await reclaims(redis) == 0
        after = await client.run("print('after')", learner="after")
        assert (after.status, after.stdout) == (OK, "after\n")
    finally:
        await client.stop()


async def test_a_job_whose_answer_is_on_record_is_not_run_again(replayed, hosts):
    redis = replayed()
    hosts.append(Host(redis, parallel=2))
    client = await fleet_client(redis)
    try:
        [name] = await wait_for_hosts(client, 1)
        result = await client.run("print('once')", learner="once")
        assert (result.status, result.stdout) == (OK, "once\n")
        [(_, first)] = await look(redis, "XRANGE", client.replies, "-", "+")
        rid = first["rid"]
        assert await look(redis, "EXISTS", KEYS.answered(rid))
        # The job comes back twice, as a log replayed without its acknowledgement would
        # bring it: once new, and once pending with a host that went silent.
        head, request = job_element(rid, client.bot, "once", int(time.time() * 1000) + 60_000,
                                    job_request({"code": "print('once')"})).split("\n", 1)
        flat = ["head", head, "request", request]
        replies = await admin(redis)
        try:
            pipe = replies.pipeline(transaction=True)  # no host reads it in between
            pipe.execute_command("XADD", JOBS, "*", *flat)
            pipe.execute_command("XREADGROUP", "GROUP", GROUP, "ghost", "COUNT", "1",
                                 "STREAMS", JOBS, ">")
            await pipe.execute()
            await replies.execute_command("XADD", JOBS, "*", *flat)
            await condition(lambda: queue_empty(redis), what="both copies settled")
            sent = await replies.execute_command("XRANGE", client.replies, "-", "+")
        finally:
            await replies.aclose()
        # Answered from the record (the bot keeps the first reply), not run, not a takeover.
        assert [fields["rid"] for _, fields in sent] == [rid] * 3
        assert (await host_report(client, name))["runs"] == 1
        assert await reclaims(redis) == 0
    finally:
        await client.stop()


async def test_a_run_sent_again_after_redis_forgot_it_gets_the_first_copys_verdict(
        replayed, hosts, tmp_path):
    # A run long enough for the bot to send it again while its first copy still sleeps.
    limits = dataclasses.replace(TEST_LIMITS, wall_s=8.0, cpu_s=10)
    redis = replayed()
    log = tmp_path / "host.log"
    host = Host(redis, parallel=2, limits=limits, log=log, fleet={"claim_idle_s": 30.0})
    hosts.append(host)
    client = await fleet_client(redis, limits=limits, timing=client_timing(limits))
    try:
        [name] = await wait_for_hosts(client, 1)
        run = asyncio.ensure_future(client.run(LONG_SLEEPER, learner="sleepy"))
        await wait_until(lambda: sleeping_child(host.pid), what="the run sleeping")
        await asyncio.to_thread(redis.restart)  # its data gone: the bot sends the run again
        result = await run
        assert (result.status, result.stdout, result.busy) == (OK, "awake\n", False)
        await condition(lambda: queue_empty(redis), what="both copies answered")
        settled_ms = int(time.time() * 1000)
        await condition(lambda: beat_since(client, name, settled_ms), what="a later beat")
        assert (await host_report(client, name))["runs"] == 1  # one copy ran
        assert "came again while this host runs it" in log.read_text()
    finally:
        await client.stop()


async def test_a_host_refused_by_redis_says_so_once_and_joins_when_let_in(replayed, hosts,
                                                                           tmp_path):
    redis = replayed()
    wrong = "not-" + redis.host_password
    log = tmp_path / "host.log"
    host = Host(redis, url=redis.url(HOST_USER, wrong), log=log,
                fleet={"refused_retry_s": 0.5})
    hosts.append(host)

    async def refusals() -> int:
        entries = await look(redis, "ACL", "LOG")
        return sum(int(e["count"]) for e in entries
                   if e["reason"] == "auth" and e["username"] == HOST_USER)

    await condition(lambda: _at_least(refusals, 4), what="the host trying again")
    assert host.process.poll() is None
    said = [line for line in log.read_text().splitlines() if HOST_USER in line]
    assert len(said) == 1, said  # one line, not one a try
    assert "ERROR" in said[0] and "password" in said[0] and wrong not in said[0]
    await look(redis, "ACL", "SETUSER", HOST_USER, f">{wrong}")  # the operator fixes it
    client = await fleet_client(redis)
    try:
        await wait_for_hosts(client, 1)
        result = await client.run("print('let in')", learner="late")
        assert (result.status, result.stdout) == (OK, "let in\n")
    finally:
        await client.stop()
    host.stop()
    lines = log.read_text().splitlines()
    assert any("answers again" in line for line in lines), lines
    assert any("joined pool cpu" in line for line in lines), lines
    assert any("left pool cpu" in line for line in lines), lines
    assert not any(wrong in line or redis.host_password in line for line in lines)


async def _at_least(count, least: int) -> bool:
    return await count() >= least
