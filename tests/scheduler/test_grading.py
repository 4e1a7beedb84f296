"""Tests for scheduler.grading: attempt -> SM-2 quality (docs/architecture.md, grading)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.grading import GradePolicy, needs_drill, passed, quality_for

FAST, SLOW = GradePolicy().fast_ms, GradePolicy().slow_ms


def test_default_policy():
    assert (FAST, SLOW) == (20_000, 60_000)


@pytest.mark.parametrize(
    ("correct", "attempts", "hint", "latency", "expected"),
    [
        # first try, no hint: by latency; both thresholds inclusive
        (True, 1, False, 0, 5),
        (True, 1, False, 19_999, 5),
        (True, 1, False, 20_000, 5),
        (True, 1, False, 20_001, 4),
        (True, 1, False, 59_999, 4),
        (True, 1, False, 60_000, 4),
        (True, 1, False, 60_001, 3),
        (True, 1, False, 10**9, 3),
        # first try after a hint: 2, however fast
        (True, 1, True, 0, 2),
        (True, 1, True, 20_000, 2),
        (True, 1, True, 10**9, 2),
        # second attempt: 1, hint or not, however fast
        (True, 2, False, 0, 1),
        (True, 2, True, 0, 1),
        (True, 2, False, 10**9, 1),
        # third attempt: 0
        (True, 3, False, 0, 0),
        (True, 3, True, 0, 0),
        # never correct: 0
        (False, 1, False, 0, 0),
        (False, 2, True, 5_000, 0),
        (False, 3, False, 90_000, 0),
    ],
)
def test_mapping(correct, attempts, hint, latency, expected):
    assert quality_for(correct, attempts, hint, latency) == expected


def test_custom_policy_boundaries():
    policy = GradePolicy(fast_ms=5_000, slow_ms=10_000)
    assert quality_for(True, 1, False, 5_000, policy) == 5
    assert quality_for(True, 1, False, 5_001, policy) == 4
    assert quality_for(True, 1, False, 10_000, policy) == 4
    assert quality_for(True, 1, False, 10_001, policy) == 3
    # Equal thresholds: no "4" band at all.
    flat = GradePolicy(fast_ms=1_000, slow_ms=1_000)
    assert [quality_for(True, 1, False, ms, flat) for ms in (1_000, 1_001)] == [5, 3]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attempts": 0},
        {"attempts": -1},
        {"attempts": 4},
        {"attempts": 1.0},
        {"attempts": True},
        {"latency_ms": -1},
        {"latency_ms": 1.5},
        {"latency_ms": None},
        {"correct": 1},
        {"correct": None},
        {"hint_used": "no"},
        {"policy": None},
    ],
)
def test_invalid_input(kwargs):
    args = {"correct": True, "attempts": 1, "hint_used": False, "latency_ms": 0} | kwargs
    with pytest.raises(ValueError):
        quality_for(**args)


@pytest.mark.parametrize(("fast", "slow"), [(-1, 10), (10, 5), (1.5, 10), (10, None)])
def test_invalid_policy(fast, slow):
    with pytest.raises(ValueError):
        GradePolicy(fast_ms=fast, slow_ms=slow)


@pytest.mark.parametrize(
    ("q", "is_pass", "drill"),
    [(0, False, True), (1, False, True), (2, False, True), (3, True, True), (4, True, False),
     (5, True, False)],
)
def test_passed_and_needs_drill(q, is_pass, drill):
    assert passed(q) is is_pass
    assert needs_drill(q) is drill


@pytest.mark.parametrize("bad", [-1, 6, 3.0, True, None, "4"])
def test_passed_rejects_bad_quality(bad):
    with pytest.raises(ValueError):
        passed(bad)
    with pytest.raises(ValueError):
        needs_drill(bad)


@given(
    st.booleans(),
    st.integers(1, 3),
    st.booleans(),
    st.integers(0, 10**7),
)
def test_only_unaided_first_try_passes(correct, attempts, hint, latency):
    # A guesser gets there by attempt 3 three times in four: only an unaided first try
    # counts as recall (q >= 3), and a slower answer never scores higher.
    q = quality_for(correct, attempts, hint, latency)
    assert 0 <= q <= 5
    assert passed(q) == (correct and attempts == 1 and not hint)
    assert quality_for(correct, attempts, hint, latency + 1) <= q
