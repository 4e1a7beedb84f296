"""The judges' processes: a record costs only its own verdict, whatever it does to them."""

from __future__ import annotations

import os
import signal

import pytest

from bot.sandbox.service.admission import default_slots
from bot.sandbox.service.checker_pool import CheckerPool, JudgeFailed, PoolLimits
from content.checkers import train_loop
from content.checkers._observe import observe
from tests.helpers.train_loop import REFERENCE

pytestmark = pytest.mark.asyncio(loop_scope="function")


@pytest.fixture(scope="module")
def correct_record() -> dict:
    return observe(REFERENCE, train_loop.plan())


async def _pool(**limits) -> CheckerPool:
    pool = CheckerPool(PoolLimits(**limits))
    await pool.start()
    return pool


async def test_a_correct_record_is_judged_in_a_checker_process(correct_record):
    pool = await _pool(size=1)
    try:
        report = await pool.judge("train_loop", 0, correct_record)
        assert report["passed"] is True
        assert os.getpid() not in {p.pid for p in pool._all}
    finally:
        await pool.close()


async def test_a_record_too_big_for_the_memory_limit_costs_its_verdict_only(correct_record):
    pool = await _pool(size=1, memory_mb=160)
    try:
        bloated = {**correct_record, "padding": [0.5 + k for k in range(3_000_000)]}
        with pytest.raises(JudgeFailed, match=r"ran out of memory .*\(its limit is 160 MB\)"):
            await pool.judge("train_loop", 0, bloated)
        assert (await pool.judge("train_loop", 0, correct_record))["passed"] is True
        assert pool.replaced == 1
    finally:
        await pool.close()


async def test_a_judge_past_its_deadline_is_replaced(correct_record):
    pool = await _pool(size=1, timeout_s=0.001)
    try:
        with pytest.raises(JudgeFailed, match="took longer than 0.001 s"):
            await pool.judge("train_loop", 0, correct_record)
        assert pool.replaced == 1
    finally:
        await pool.close()


async def test_a_judge_that_dies_is_replaced(correct_record):
    pool = await _pool(size=1)
    try:
        (process,) = pool._all
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(JudgeFailed, match="stopped while judging .* killed by SIGKILL") \
                as failed:
            await pool.judge("train_loop", 0, correct_record)
        assert "memory" not in str(failed.value)  # it was not
        assert (await pool.judge("train_loop", 0, correct_record))["passed"] is True
    finally:
        await pool.close()


async def test_malformed_records_are_answered_plainly(correct_record):
    pool = await _pool(size=1)
    try:
        for record in (None, [], {"scenarios": "no"}, {"scenarios": [{"events": [["?"]]}]}):
            with pytest.raises(JudgeFailed, match="could not read what the run reported"):
                await pool.judge("train_loop", 0, record)
        with pytest.raises(JudgeFailed):
            await pool.judge("no-such-checker", 0, correct_record)
        assert pool.replaced == 0  # a malformed record is an answer, not a failure
    finally:
        await pool.close()


async def test_numbers_no_float_holds_are_refused_by_the_checker_too(correct_record):
    """The service refuses them where it reads a run's report; a record that reaches a
    checker process another way is read with the same bound (a 400-digit int once raised
    OverflowError there and ended the process)."""
    pool = await _pool(size=1)
    try:
        (process,) = pool._all
        scenario = correct_record["scenarios"][0]
        for huge in (10 ** 400, -(10 ** 309)):
            forged = {**correct_record,
                      "scenarios": [{**scenario, "final": [huge, 0.0, 0.0, 0.0]}]}
            with pytest.raises(JudgeFailed, match="held a number outside a float's range"):
                await pool.judge("train_loop", 0, forged)
        assert pool._all == {process} and pool.replaced == 0
        assert (await pool.judge("train_loop", 0, correct_record))["passed"] is True
    finally:
        await pool.close()


async def test_slots_follow_memory_not_only_cpus(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    pages = {"SC_PHYS_PAGES": 24 * 1024 * 256, "SC_PAGE_SIZE": 4096}  # 24 GiB
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert default_slots(768) == 8  # four per CPU: sleeping runs leave the CPUs free
    pages["SC_PHYS_PAGES"] = 2 * 1024 * 256  # 2 GiB: memory is the bound, CPUs the floor
    assert default_slots(768) == 2
