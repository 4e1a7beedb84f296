"""Tests for scheduler.sm2: golden vectors (SM-2 as published), properties, and a
differential test.

Peer: PyPI ``supermemo2`` 3.0.1 (``supermemo2/sm_two.py``, read for this module). Its state
rules agree with ours: the interval uses the EF from before the update; a first review
(repetitions 0) gives 1 day, the second 6; q < 3 sets repetitions 0 and interval 1; the EF is
updated on every grade, failures too, then floored at 1.3 (no cap). Where it differs:

1. EF is a float, so ``ceil(interval * easiness)`` rounds up an exact integer product that
   came out a hair high (1.3 + 0.1 + 0.1 == 1.5000000000000002, 6 * that -> 10, not 9). The
   differential test allows exactly this, and only this, difference.
2. It validates nothing: quality 6, -1, 2.5 or True are accepted and move the EF (q=6 adds
   0.16). We raise ValueError; the differential test feeds only 0..5.
3. Its ``review_datetime`` (default ``utcnow()``, naive) plus the interval is the next
   review: a UTC timestamp, not the learner's study day. That is out of scope for pure SM-2
   (see scheduler.studyday), so it is not compared.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import supermemo2
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler.sm2 import NEW, SM2State, review

grades = st.integers(min_value=0, max_value=5)
states = st.builds(
    SM2State,
    ef100=st.integers(min_value=130, max_value=400),
    repetitions=st.integers(min_value=0, max_value=50),
    interval=st.integers(min_value=0, max_value=10_000),
)


def run(seq):
    """States after each grade of ``seq``, starting from a new card."""
    state, out = NEW, []
    for q in seq:
        state = review(state, q)
        out.append(state)
    return out


def expected_delta(q: int) -> int:
    # Wozniak's formula, 0.1 - (5-q)(0.08 + 0.02(5-q)), in hundredths; independent of sm2.py.
    return 10 - (5 - q) * (8 + 2 * (5 - q))


# --- golden vectors (SM-2 as published) -------------------------------------

GOLDEN = [
    # grades, EF (hundredths) after each, interval after each
    ([5, 5, 5, 5, 5], [260, 270, 280, 290, 300], [1, 6, 17, 48, 140]),
    ([4, 4, 4, 4, 4], [250] * 5, [1, 6, 15, 38, 95]),
    ([3] * 6, [236, 222, 208, 194, 180, 166], [1, 6, 14, 30, 59, 107]),
    ([5, 5, 2, 5, 5], [260, 270, 238, 248, 258], [1, 6, 1, 1, 6]),
    ([0, 0, 0, 0], [170, 130, 130, 130], [1, 1, 1, 1]),
    (
        [5, 4, 3, 2, 1, 0, 5, 5],
        [260, 260, 246, 214, 160, 130, 140, 150],
        [1, 6, 16, 1, 1, 1, 1, 6],
    ),
    # The float round-up edge: EF 1.30 -> 1.40 -> 1.50, then ceil(6 * 1.5) is exactly 9.
    ([2, 0, 1, 5, 5, 5], [218, 138, 130, 140, 150, 160], [1, 1, 1, 1, 6, 9]),
]


@pytest.mark.parametrize(("seq", "efs", "intervals"), GOLDEN, ids=[str(g[0]) for g in GOLDEN])
def test_golden_vectors(seq, efs, intervals):
    states_ = run(seq)
    assert [s.ef100 for s in states_] == efs
    assert [s.interval for s in states_] == intervals


def test_golden_repetitions():
    assert [s.repetitions for s in run([5, 5, 2, 5, 5])] == [1, 2, 0, 1, 2]
    assert [s.repetitions for s in run([5, 4, 3, 2, 1, 0, 5, 5])] == [1, 2, 3, 0, 0, 0, 1, 2]


def test_new_card():
    assert NEW == SM2State.new() == SM2State(250, 0, 0)


def test_float_round_up_regression():
    # Regression the integer EF exists for: float SM-2 (here the supermemo2 package) says 10.
    assert run([2, 0, 1, 5, 5, 5])[-1] == SM2State(160, 3, 9)
    e, i, n = 2.5, 0, 0
    for q in [2, 0, 1, 5, 5, 5]:
        r = supermemo2.review(q, e, i, n, review_datetime="2026-01-01 00:00:00")
        e, i, n = r["easiness"], r["interval"], r["repetitions"]
    assert i == 10
    assert 6 * 1.5000000000000002 > 9  # the hair that ceil() turns into a whole day


@pytest.mark.parametrize(("ef100", "interval", "expected"), [(135, 180, 243), (134, 750, 1005)])
def test_no_float_anywhere(ef100, interval, expected):
    # Even a float only at the last step, ceil(interval * (ef100 / 100)), is a day off here:
    # 180 * 1.35 == 243.00000000000003.
    assert review(SM2State(ef100, 5, interval), 4).interval == expected
    assert math.ceil(interval * (ef100 / 100)) == expected + 1


# --- input validation --------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1, 6, 2.0, True, False, "5", None, 5.0])
def test_invalid_grades_rejected(bad):
    with pytest.raises(ValueError, match="quality"):
        review(NEW, bad)


@pytest.mark.parametrize(
    "bad",
    [
        SM2State(129, 0, 0),
        SM2State(0, 0, 0),
        SM2State(250, -1, 0),
        SM2State(250, 0, -1),
        SM2State(2.5, 0, 0),  # a float EF is a unit mistake, not 2.5
        SM2State(250, True, 0),
        (250, 0, 0),
        None,
    ],
)
def test_invalid_states_rejected(bad):
    with pytest.raises(ValueError):
        review(bad, 5)


# --- properties --------------------------------------------------------------------------


@given(st.lists(grades, max_size=40))
def test_ef_never_below_floor(seq):
    assert all(s.ef100 >= 130 for s in run(seq))


@given(states, st.integers(min_value=0, max_value=2))
def test_fail_restarts(state, q):
    after = review(state, q)
    assert (after.repetitions, after.interval) == (0, 1)


@given(states, st.integers(min_value=3, max_value=5))
def test_pass_increments_repetitions(state, q):
    after = review(state, q)
    assert after.repetitions == state.repetitions + 1
    assert after.interval >= 1


@given(st.lists(grades, max_size=20), st.lists(st.integers(3, 5), min_size=1, max_size=15))
def test_intervals_grow_over_passing_run(prefix, passes):
    # From any reachable state (any history), passing grades never shorten the interval,
    # and from the third repetition on they strictly lengthen it (EF >= 1.3).
    state = run(prefix)[-1] if prefix else NEW
    for q in passes:
        after = review(state, q)
        assert after.interval >= state.interval
        if after.repetitions >= 3:
            assert after.interval > state.interval
        state = after


@given(states, grades)
def test_ef_change_depends_only_on_grade(state, q):
    after = review(state, q)
    assert after.ef100 == max(130, state.ef100 + expected_delta(q))
    # Same grade from a different state (well above the floor): same change.
    other = SM2State(state.ef100 + 100, state.repetitions, state.interval)
    assert review(other, q).ef100 - other.ef100 == expected_delta(q)


@given(states, grades)
def test_interval_uses_old_ef_rounded_up(state, q):
    after = review(state, q)
    if q >= 3 and state.repetitions >= 2:
        exact = state.interval * state.ef100  # hundredths of a day
        # Smallest whole day >= the exact product (never 0).
        assert after.interval == max(1, -(-exact // 100))


@given(states, grades)
def test_pure_and_immutable(state, q):
    copy = dataclasses.replace(state)
    assert review(state, q) == review(state, q)
    assert state == copy
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.ef100 = 300  # type: ignore[misc]
    assert not hasattr(state, "__dict__")  # slots


# --- differential test against supermemo2 ------------------------------------------------


def compare_with_supermemo2(seq) -> int:
    """Run ``seq`` through both; fail on any difference except the float round-up edge.

    The package keeps its own float EF throughout (so its drift is realistic). After a
    round-up edge its interval is set back to ours, so later steps compare like for like.
    Returns how many edges were seen.
    """
    ours = NEW
    e, i, n = 2.5, 0, 0
    edges = 0
    for q in seq:
        product = i * e  # what the package will ceil(), if it gets that far
        ours_before, ours = ours, review(ours, q)
        r = supermemo2.review(q, e, i, n, review_datetime="2026-01-01 00:00:00")
        e, i, n = r["easiness"], r["interval"], r["repetitions"]
        assert n == ours.repetitions, (seq, q)
        assert abs(e * 100 - ours.ef100) < 1e-6, (seq, q, e, ours)
        if i != ours.interval:
            nearest = round(product)
            assert q >= 3 and ours_before.repetitions >= 2, (seq, q)
            assert abs(product - nearest) < 1e-9, (seq, q, product)
            assert ours.interval == nearest and i == nearest + 1, (seq, q, product, i, ours)
            edges += 1
            i = ours.interval
    return edges


@settings(max_examples=200)
@given(st.lists(grades, max_size=40))
@example([2, 0, 1, 5, 5, 5])
def test_differential_against_supermemo2(seq):
    compare_with_supermemo2(seq)


def test_differential_sees_the_edge():
    # The comparison above must be able to see (and accept) the edge, not just agree.
    assert compare_with_supermemo2([2, 0, 1, 5, 5, 5]) == 1
    assert compare_with_supermemo2([5, 5, 5, 5, 5]) == 0
