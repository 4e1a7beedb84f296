"""A fleet at work: real bot processes and sandbox hosts sharing one real Redis.

Two hosts serve the `cpu` pool for the whole module. What must hold: every run answered
exactly once whichever host takes it, one run per learner across shards, the queue bound
across bot processes, each user held to its part of Redis, and learner code that reaches
neither the broker nor its password.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest
import pytest_asyncio
from redis.exceptions import AuthenticationError, NoPermissionError

from bot.bench.local_redis import LocalRedis
from bot.sandbox.broker import BOT_USER, HOST_USER, Keys, connect
from bot.sandbox.client.client import SandboxBusy
from bot.sandbox.client.fleet import BrokerUnavailable, FleetClient
from bot.sandbox.protocol import OK
from tests.helpers.fleet import Host, fleet_client, fleet_keys, wait_for_hosts
from tests.helpers.paths import REPO
from tests.helpers.sandbox import TEST_LIMITS
from tests.helpers.train_loop import REFERENCE

pytestmark = pytest.mark.asyncio(loop_scope="module")
KEYS = Keys()
SLEEPER = "import time\ntime.sleep(1.5)\nprint('awake')\n"


@pytest.fixture(scope="module")
def redis():
    with LocalRedis() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hosts(redis):
    started = [Host(redis) for _ in range(2)]
    client = await fleet_client(redis)
    try:
        await wait_for_hosts(client, 2)
        yield started
    finally:
        await client.stop()
        for host in started:
            host.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def client(redis, hosts):
    client = await fleet_client(redis)
    yield client
    await client.stop()


def bot_process(redis: LocalRedis, runs: list[dict]) -> subprocess.Popen:
    spec = {"url": redis.bot_url, "runs": runs}
    return subprocess.Popen([sys.executable, "-m", "tests.helpers.fleet_bot", json.dumps(spec)],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)


async def test_two_bots_and_two_hosts_answer_every_run_exactly_once(redis, hosts):
    bots = [bot_process(redis, [{"code": f"print('{b}-{i}')", "learner": f"b{b}-l{i}"}
                                for i in range(10)]) for b in range(2)]
    outputs = await asyncio.gather(*(asyncio.to_thread(b.communicate, timeout=180)
                                     for b in bots))
    for b, (stdout, _) in enumerate(outputs):
        lines = [json.loads(line) for line in stdout.splitlines()]
        answers = [line for line in lines if "learner" in line]
        assert sorted((a["learner"], a["status"], a["stdout"]) for a in answers) == sorted(
            (f"b{b}-l{i}", OK, f"{b}-{i}\n") for i in range(10))
        assert lines[-1] == {"replies": 10, "distinct": 10}  # no run answered twice
    keys = await fleet_keys(redis)
    assert not [k for k in keys if ":admit:learner:" in k or ":admit:queue:" in k]


async def test_a_learner_in_two_shards_at_once_gets_one_run(redis, client):
    other = await fleet_client(redis)
    try:
        for attempt in range(3):
            learner = f"twice-{attempt}"
            outcomes = await asyncio.gather(client.run(SLEEPER, learner=learner),
                                            other.run(SLEEPER, learner=learner),
                                            return_exceptions=True)
            ran = [o for o in outcomes if not isinstance(o, Exception)]
            refused = [o for o in outcomes if isinstance(o, SandboxBusy)]
            assert [r.stdout for r in ran] == ["awake\n"], outcomes
            assert [r.reason for r in refused] == ["learner"]
            assert "still running" in str(refused[0])
        # Once answered, the learner may go again, in either shard.
        assert (await other.run("print(1)", learner="twice-0")).stdout == "1\n"
    finally:
        await other.stop()


async def test_the_queue_bound_holds_across_bot_processes(redis, client):
    small = [await fleet_client(redis, max_queue=3) for _ in range(2)]
    try:
        outcomes = await asyncio.gather(
            *(small[i % 2].run(SLEEPER, learner=f"q{i}") for i in range(8)),
            return_exceptions=True)
        full = [o for o in outcomes if isinstance(o, SandboxBusy) and o.reason == "full"]
        ran = [o for o in outcomes if not isinstance(o, Exception)]
        assert len(ran) <= 3 and len(full) >= 5, outcomes
        assert all(r.stdout == "awake\n" for r in ran)
        assert "busy right now" in str(full[0])
    finally:
        for each in small:
            await each.stop()


async def test_a_code_check_is_judged_through_the_fleet(client):
    result = await client.run(REFERENCE, learner="checker", mode="check",
                              checker="train_loop")
    assert result.status == OK and result.report is not None and result.report.passed


async def test_a_wrong_password_is_refused(redis):
    once = FleetClient(redis.url(BOT_USER, "not-the-password"))
    with pytest.raises(BrokerUnavailable, match="Redis refused user tutor-bot"):
        await once.start(keep_trying=False)  # a command: one try, one line
    wrong = FleetClient(redis.url(BOT_USER, "not-the-password"))
    await wrong.start()  # a bot: it keeps trying, and refuses runs meanwhile
    assert not wrong.available and "check REDIS_BOT_PASSWORD" in wrong.link.problem
    with pytest.raises(SandboxBusy) as refused:
        await wrong.run("print(1)", learner="locked-out")
    assert refused.value.reason == "unreachable"
    await wrong.stop()
    for user in ("default", HOST_USER):
        stranger = connect(redis.url(user, "guess"))
        with pytest.raises(AuthenticationError):
            await stranger.ping()
        await stranger.aclose()


async def test_each_user_may_do_only_its_part(redis, client):
    bot = connect(redis.bot_url)
    host = connect(redis.host_url)
    jobs, replies = KEYS.jobs("cpu"), KEYS.replies(client.bot)
    try:
        # The bot adds jobs and reads replies; it cannot read or take jobs, nor answer.
        for reading in (lambda: bot.xrange(jobs), lambda: bot.xread({jobs: "0-0"}),
                        lambda: bot.xreadgroup("hosts", "spy", {jobs: ">"}),
                        lambda: bot.xadd(replies, {"rid": "x", "result": "{}"}),
                        lambda: bot.keys("*"), lambda: bot.config_get("*"),
                        lambda: bot.eval("return redis.call('XRANGE', KEYS[1], '-', '+')",
                                         1, jobs)):
            with pytest.raises(NoPermissionError):
                await reading()
        # A host takes jobs and writes replies; it cannot read replies nor admission.
        for reading in (lambda: host.xread({replies: "0-0"}),
                        lambda: host.get(KEYS.epoch), lambda: host.set(KEYS.epoch, "x"),
                        lambda: host.keys("*"), lambda: host.flushall()):
            with pytest.raises(NoPermissionError):
                await reading()
    finally:
        await bot.aclose()
        await host.aclose()


async def test_learner_code_reaches_neither_redis_nor_its_password(redis, hosts, client):
    for host in hosts:  # not in argv either, which every local user can read
        assert redis.host_password not in open(f"/proc/{host.pid}/cmdline").read()
    result = await client.run(textwrap.dedent(f"""
        import os, socket
        for path in ("/proc/self/environ", "/proc/1/environ", "/proc/1/cmdline"):
            try:
                print(path, open(path, "rb").read())
            except OSError as exc:
                print(path, type(exc).__name__)
        print(sorted(os.environ))
        try:
            socket.create_connection(("127.0.0.1", {redis.port}), timeout=2)
            print("connected")
        except OSError as exc:
            print("no network", type(exc).__name__)
    """), learner="spy")
    assert result.status == OK
    assert "no network" in result.stdout and "connected" not in result.stdout
    for secret in (redis.host_password, redis.bot_password, "SANDBOX_BROKER"):
        assert secret not in result.stdout + result.stderr


async def test_a_cuda_run_without_gpu_hosts_runs_on_the_cpu_pool(client):
    result = await client.run("print('where')", learner="gpu-wanted", device="cuda")
    assert (result.status, result.stdout, result.device) == (OK, "where\n", "cpu")


async def test_the_rate_limit_holds_across_shards(redis, hosts):
    shards = [await fleet_client(redis, runs_per_minute=2) for _ in range(2)]
    try:
        assert (await shards[0].run("print(1)", learner="eager")).stdout == "1\n"
        assert (await shards[1].run("print(2)", learner="eager")).stdout == "2\n"
        with pytest.raises(SandboxBusy, match="2 runs this minute") as refused:
            await shards[0].run("print(3)", learner="eager")
        assert refused.value.reason == "rate"
    finally:
        for shard in shards:
            await shard.stop()


async def test_tutor_sandbox_serve_broker_joins_the_fleet(redis, hosts, client, tmp_path):
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    served = subprocess.Popen(
        [sys.executable, "-m", "bot", "sandbox", "serve", "--broker", redis.host_url,
         "--limits", json.dumps(dataclasses.asdict(TEST_LIMITS))],
        cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_for_hosts(client, 3)
        # The password went on through the environment: argv no longer holds it.
        assert redis.host_password not in open(f"/proc/{served.pid}/cmdline").read()
    finally:
        served.terminate()
        served.wait(60)
    assert served.returncode == 0  # a stop is a clean leave


async def test_a_host_that_can_run_no_code_stays_out_of_the_fleet(redis, tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "bot.sandbox.service", "--cgroup-root", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
             "SANDBOX_BROKER": redis.host_url})
    assert refused.returncode == 2 and "not joining the fleet" in refused.stderr
