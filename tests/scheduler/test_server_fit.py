"""scheduler/server_fit.py: the floor, the refit rule, the clustered gate (by hand, on a
server whose learners forget faster than FSRS-6's defaults expect, and on one whose memory
is the defaults), and what a fit changes for admins. The servers are generated here
(tests/helpers/server_logs.py), not simulated from the bundled deck, so a deck edit cannot
flip a gate."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, timedelta

import pytest
from fsrs.scheduler import DEFAULT_PARAMETERS

from scheduler import fsrs_fit
from scheduler.evaluation import Review
from scheduler.server_fit import (
    FLOOR_DAYS,
    FLOOR_REVIEWS,
    ServerFit,
    Z,
    clustered_gain,
    fit_due,
    fit_server,
    floor_refusal,
    interval_changes,
    workload,
)
from tests.helpers.server_logs import FAST_FORGETTERS, fsrs_world

DEFAULTS = tuple(DEFAULT_PARAMETERS)


def fsrs_server(learners: int, days: int, seed: int, new_per_day: int = 6) -> list[Review]:
    """A server whose memory is exactly FSRS-6 with the default parameters."""
    return [Review.graded((learner, card), day, quality) for learner, day, card, quality
            in fsrs_world(learners, days, seed, new_per_day=new_per_day)]


def round_trip(fit: ServerFit) -> ServerFit:
    return ServerFit.from_dict(json.loads(json.dumps(fit.as_dict())))


@pytest.fixture
def no_fit(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a refused server must not be fitted")
    monkeypatch.setattr(fsrs_fit, "fit", refuse)


# -- the floor and the refit rule -----------------------------------------------------------

def test_the_floor_refuses_few_reviews_or_few_days_and_says_the_numbers():
    assert floor_refusal(FLOOR_REVIEWS, FLOOR_DAYS) is None
    assert floor_refusal(1_234, 12) == \
        "needs 2,000 reviews over 30 days; this server has 1,234 over 12 days"
    assert "1,999 over 60 days" in floor_refusal(1_999, 60)
    assert "5,000 over 29 days" in floor_refusal(5_000, 29)


def test_a_server_below_the_floor_is_refused_without_a_fit(no_fit):
    reviews = [Review((learner, card), day, 3, 4, True)
               for day in range(60) for learner in range(3) for card in range(11)]
    assert len(reviews) == 1_980
    fit = fit_server(reviews)
    assert (fit.reviews, fit.days, fit.learners) == (1_980, 60, 3)
    assert fit.parameters is None and not fit.passed and not fit.gates
    assert "1,980 over 60 days" in fit.refused
    assert fit.in_force == DEFAULTS
    assert round_trip(fit) == fit

    short = [Review((0, card), day, 3, 4, True) for day in range(29) for card in range(100)]
    assert "2,900 over 29 days" in fit_server(short).refused


def test_a_held_out_part_from_one_learner_is_refused(no_fit):
    reviews = fsrs_server(1, 60, seed=3, new_per_day=12)
    assert len(reviews) >= FLOOR_REVIEWS
    fit = fit_server(reviews)
    assert fit.parameters is None and not fit.passed
    assert "1 learner" in fit.refused


NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def test_fit_due_on_the_first_attempt_once_the_floor_is_met():
    assert fit_due(3_000, 40, None, None, NOW)
    assert not fit_due(1_500, 40, None, None, NOW)
    assert not fit_due(3_000, 20, None, None, NOW)


def test_fit_due_a_week_after_the_last_attempt_with_a_fifth_more_reviews():
    week = timedelta(days=7)
    assert not fit_due(3_000, 60, 2_000, NOW - timedelta(days=6), NOW)  # too soon
    assert not fit_due(2_200, 60, 2_000, NOW - week, NOW)  # grown 10 %
    assert fit_due(2_400, 60, 2_000, NOW - week, NOW)  # grown 20 %
    assert fit_due(3_510, 60, 2_925, NOW - timedelta(days=30), NOW)


# -- the gate -------------------------------------------------------------------------------

def test_clustered_gain_by_hand():
    # d = a - b = 0.5, 1.0, 1.0, -0.5: mean 0.5; deviations 0, 0.5 | 0.5 | -1.0 per learner
    # x, y, z: sums 0.5, 0.5, -1.0; sqrt(3/2 * 1.5) / 4 = 0.375
    gain, se = clustered_gain([1.0, 2.0, 3.0, 0.5], [0.5, 1.0, 2.0, 1.0], "xxyz")
    assert gain == pytest.approx(0.5)
    assert se == pytest.approx(0.375)
    # one review per learner: sqrt(4/3 * (0 + 0.25 + 0.25 + 1)) / 4
    _, alone = clustered_gain([1.0, 2.0, 3.0, 0.5], [0.5, 1.0, 2.0, 1.0], "wxyz")
    assert alone == pytest.approx(math.sqrt(2) / 4)
    with pytest.raises(ValueError):
        clustered_gain([1.0, 2.0], [0.5, 1.0], "xx")


def test_a_fit_that_beats_the_parameters_in_force_and_the_defaults_passes():
    # Learners who forget faster than the defaults expect; in force, parameters an earlier
    # fit might have left that overrate how much a recall grows stability (w8 up 0.3).
    reviews = [Review.graded((learner, card), day, quality) for learner, day, card, quality
               in fsrs_world(16, 40, 1, FAST_FORGETTERS)]
    in_force = (*DEFAULTS[:8], DEFAULTS[8] + 0.3, *DEFAULTS[9:])
    fit = fit_server(reviews, in_force)
    assert fit.passed and fit.refused is None
    assert (fit.days, fit.learners) == (40, 16)
    assert fit.held_out == pytest.approx((fit.trained + fit.held_out) / 5, abs=1)
    assert [g.versus for g in fit.gates] == ["in force", "defaults"]
    for gate in fit.gates:
        assert gate.gain > Z * gate.standard_error > 0
        assert gate.candidate_loss == fit.scores["fitted"]["log_loss"]
        assert gate.gain == pytest.approx(gate.other_loss - gate.candidate_loss)
    assert fit.in_force == in_force and len(fit.parameters) == 21
    assert set(fit.scores) == {"fitted", "in force", "defaults"}
    assert round_trip(fit) == fit


def test_a_server_whose_memory_is_the_defaults_does_not_pass_against_them():
    reviews = fsrs_server(12, 35, seed=2)
    assert len(reviews) >= FLOOR_REVIEWS
    fit = fit_server(reviews)
    assert fit.refused is None and fit.parameters is not None
    assert fit.days >= FLOOR_DAYS
    (gate,) = fit.gates
    assert gate.versus == "defaults"
    assert not gate.passed and not fit.passed
    assert gate.gain <= Z * gate.standard_error


# -- what a fit changes ---------------------------------------------------------------------

def test_interval_changes_equal_parameters_change_nothing():
    changes = interval_changes(DEFAULTS, DEFAULTS)
    assert {c.ratings for c in changes} >= {"Good", "Good, Good", "Good, Good, Good",
                                            "Again", "Again, Good", "Hard"}
    assert all(c.before == c.after >= 1 for c in changes)
    good = {c.ratings: c.before for c in changes}
    assert good["Good"] < good["Good, Good"] < good["Good, Good, Good"]


def test_interval_changes_a_larger_initial_stability_lengthens_the_first_interval():
    longer = list(DEFAULTS)
    longer[2] *= 4  # initial stability after Good
    first = next(c for c in interval_changes(DEFAULTS, longer) if c.ratings == "Good")
    assert first.after > first.before


TODAY = date(2026, 3, 1)


def states(n: int = 40) -> list[tuple[float, float, date, date]]:
    return [(1.0 + k % 10, 5.0, TODAY - timedelta(days=3), TODAY + timedelta(days=k % 7))
            for k in range(n)]


def test_workload_equal_parameters_equal_work():
    w = workload(states(), TODAY, DEFAULTS, DEFAULTS)
    assert w.days == 30 and w.before_per_day == w.after_per_day > 0


def test_workload_a_card_due_in_the_past_counts_today():
    overdue = [(5.0, 5.0, TODAY - timedelta(days=20), TODAY - timedelta(days=10))]
    assert workload(overdue, TODAY, DEFAULTS, DEFAULTS, days=1).before_per_day == 1.0
    later = [(5.0, 5.0, TODAY - timedelta(days=3), TODAY + timedelta(days=1))]
    assert workload(later, TODAY, DEFAULTS, DEFAULTS, days=1).before_per_day == 0.0


def test_workload_longer_intervals_mean_fewer_reviews():
    longer = list(DEFAULTS)
    longer[8] += 1.0  # stability grows faster on a recall
    w = workload(states(), TODAY, DEFAULTS, longer)
    assert w.after_per_day < w.before_per_day
