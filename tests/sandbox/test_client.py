"""Admission (queue, one run per learner, rate limit), worker restarts, and the CLI."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from bot.sandbox.client.client import SandboxBusy, SandboxClient
from bot.sandbox.protocol import ERROR, OK
from tests.helpers.sandbox import TEST_LIMITS, sleeping_child, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_learner_has_one_run_in_flight(sandbox):
    first = asyncio.create_task(sandbox.run("import time; time.sleep(0.5)", learner="ann"))
    await asyncio.sleep(0)  # the task runs up to its first wait: admitted by then
    with pytest.raises(SandboxBusy, match="still running") as refused:
        await sandbox.run("print(1)", learner="ann")
    assert refused.value.reason == "learner"
    other = await sandbox.run("print(1)", learner="bob")  # others are not held up
    assert other.status == OK
    assert (await first).status == OK
    assert (await sandbox.run("print(2)", learner="ann")).stdout == "2\n"


async def test_per_learner_rate_limit_says_when_to_come_back():
    now = [1000.0]
    client = SandboxClient(limits=TEST_LIMITS, runs_per_minute=2, clock=lambda: now[0])
    client._admit("ann")
    client._in_flight.clear()
    client._admit("ann")
    client._in_flight.clear()
    now[0] += 15
    with pytest.raises(SandboxBusy, match="2 runs this minute; try again in 45 s") as refused:
        client._admit("ann")
    assert refused.value.reason == "rate"
    client._admit("bob")
    now[0] += 46
    client._in_flight.clear()
    client._admit("ann")


async def test_a_full_queue_refuses_new_runs():
    client = SandboxClient(limits=TEST_LIMITS, max_queue=1)
    client._pending[1] = ({}, None)
    with pytest.raises(SandboxBusy, match="busy right now") as refused:
        client._admit("ann")
    assert refused.value.reason == "full"


async def test_a_dead_worker_is_restarted_and_the_run_is_answered(sandbox):
    first_worker = sandbox.service_pid
    running = asyncio.create_task(sandbox.run("import time; time.sleep(1); print('done')"))
    await wait_until(lambda: sleeping_child(first_worker), what="the run to start")
    os.kill(first_worker, signal.SIGKILL)
    result = await asyncio.wait_for(running, 120)
    assert sandbox.service_pid != first_worker
    assert (result.status, result.stdout) == (OK, "done\n")  # run again, not lost
    assert (await sandbox.run("print('next')")).stdout == "next\n"


async def test_a_run_that_kills_the_worker_twice_is_reported_not_retried_forever(sandbox):
    running = asyncio.create_task(sandbox.run("import time; time.sleep(30)"))
    killed: set[int] = set()
    for _ in range(2):  # each time the run is under way in a new worker, that worker dies
        worker = await wait_until(
            lambda: sandbox.service_pid if sandbox.service_pid not in killed and sleeping_child(
                sandbox.service_pid) else None, what="the run to start in a new worker")
        os.kill(worker, signal.SIGKILL)
        killed.add(worker)
    result = await asyncio.wait_for(running, 120)
    assert result.status == ERROR and "crashed" in result.stderr
    assert result.unjudged == "crash"  # the engine grades nothing on it
    assert (await sandbox.run("print('ok')")).status == OK


async def test_a_worker_that_could_not_be_restarted_is_started_by_a_later_run(monkeypatch):
    client = SandboxClient(limits=TEST_LIMITS, runs_per_minute=10_000)
    await client.start()
    real_start, failed_once = client.start, []

    async def start(*args, **kwargs):
        if not failed_once:  # the restart right after the crash fails (no memory, say)
            failed_once.append(True)
            raise RuntimeError("the worker could not import torch")
        return await real_start(*args, **kwargs)

    monkeypatch.setattr(client, "start", start)
    try:
        os.kill(client.service_pid, signal.SIGKILL)
        await wait_until(lambda: failed_once and client._writer is None,
                         what="the failed restart")
        result = await client.run("print('back')")  # not left without a worker for life
        assert (result.status, result.stdout) == (OK, "back\n")
    finally:
        await client.stop()
