"""scheduler/evaluation.py and scheduler/fsrs_fit.py: the metrics on inputs checked by hand,
the split, what is evaluated, and the evaluation of py-fsrs's public log
(tests/fixtures/README.md)."""

from __future__ import annotations

import csv
import gzip
import math
from datetime import UTC, datetime

import pytest

from scheduler import fsrs_fit
from scheduler.evaluation import (
    Review,
    auc,
    by_card,
    evaluate,
    fit_sequences,
    log_loss,
    reviews_from_pyfsrs_csv,
    rmse_bins,
    time_series_folds,
)
from scheduler.fsrs_review import next_memory, recall_after, scheduler_with
from tests.helpers.paths import FIXTURES

PUBLIC_LOG = FIXTURES / "review_logs_josh_1711744352250_to_1728234780857.csv.gz"


@pytest.fixture(scope="module")
def public_log() -> list[Review]:
    with gzip.open(PUBLIC_LOG, "rt", newline="") as f:
        return reviews_from_pyfsrs_csv(csv.DictReader(f))


# -- metrics --------------------------------------------------------------------------------

def test_log_loss_is_the_mean_cross_entropy():
    expected = -(math.log(0.8) + math.log(0.6)) / 2
    assert log_loss([True, False], [0.8, 0.4]) == pytest.approx(expected)
    assert log_loss([True], [1.0]) == pytest.approx(0.0, abs=1e-12)
    # clipped to 1e-15: large, not infinite
    assert log_loss([False], [1.0]) == pytest.approx(-math.log(1e-15), rel=1e-3)


def test_auc_counts_pairs_ordered_right_and_ties_as_half():
    # recalled 0.9 and 0.4, forgotten 0.5 and 0.1: 3 of the 4 pairs in the right order
    assert auc([True, True, False, False], [0.9, 0.4, 0.5, 0.1]) == 0.75
    assert auc([True, False], [0.5, 0.5]) == 0.5
    assert auc([True, True, False], [0.7, 0.5, 0.5]) == 0.75
    assert auc([True, True], [0.2, 0.9]) is None


def test_rmse_bins_compares_means_within_a_bin_weighted_by_its_size():
    # one bin: recall rate 0.5 against a mean prediction of 0.8
    assert rmse_bins([True, False], [0.9, 0.7], [1, 3], [2, 2], [0, 0]) == pytest.approx(0.3)
    # intervals 1 and 10 fall in different bins (base 3.62): errors 0.1 and 0.7
    assert rmse_bins([True, False], [0.9, 0.7], [1, 10], [2, 2], [0, 0]) == \
        pytest.approx(math.sqrt((0.1 ** 2 + 0.7 ** 2) / 2))
    # review numbers 2 and 3 share a bin (base 1.89), 4 does not; lapses 0 and 1 differ
    assert rmse_bins([True, False], [0.9, 0.7], [1, 1], [2, 3], [0, 0]) == pytest.approx(0.3)
    assert rmse_bins([True, False], [0.9, 0.7], [1, 1], [2, 4], [0, 0]) == pytest.approx(0.5)
    assert rmse_bins([True, False], [0.9, 0.7], [1, 1], [2, 2], [0, 1]) == pytest.approx(0.5)
    # a bin of three weighs three times one of one
    y, p = [True, True, True, False], [0.5, 0.5, 0.5, 0.5]
    assert rmse_bins(y, p, [1, 1, 1, 10], [2] * 4, [0] * 4) == \
        pytest.approx(math.sqrt((3 * 0.5 ** 2 + 0.5 ** 2) / 4))


def test_folds_are_sklearns_time_series_split():
    assert time_series_folds(12, 5) == [(2, 4), (4, 6), (6, 8), (8, 10), (10, 12)]
    assert time_series_folds(13, 5) == [(3, 5), (5, 7), (7, 9), (9, 11), (11, 13)]
    assert time_series_folds(4, 1) == [(2, 4)]
    with pytest.raises(ValueError, match="too few"):
        time_series_folds(5, 5)


# -- what is evaluated, and what each model predicts ----------------------------------------

def _card(card, days_ratings):
    return [Review.rated(card, day, rating) for day, rating in days_ratings]


def test_only_reviews_on_a_later_day_are_scored_with_srs_benchmarks_review_number_and_lapses():
    # days 0, 0, 2, 2, 5, 9: scored on days 2, 5 and 9; the day-2 Again is a lapse, the
    # first review's Again and the same-day repeat's are not
    log = _card("a", [(0, 1), (0, 3), (2, 1), (2, 3), (5, 1), (9, 3)]) + _card("b", [(4, 3)])
    cards, scored = by_card(log)
    assert [[pos for pos, _ in history] for history in cards] == [[0, 1, 2, 3, 4, 5], [6]]
    assert [(s.pos, s.step, s.elapsed, s.reps, s.lapses, s.recalled) for s in scored] == [
        (2, 2, 2, 2, 0, False), (4, 4, 3, 3, 1, False), (5, 5, 4, 4, 2, True)]


def test_sm2_predicts_90_percent_when_its_interval_is_up():
    # quality 4 each time: intervals 1, then 6; reviewed on time, then 6 days late
    on_time = [Review("c", d, 3, 4, True) for d in (0, 1, 7)]
    late = [Review("d", d, 3, 4, d != 13) for d in (0, 1, 13)]
    result = evaluate(on_time + late, splits=1, fit=False)
    # scored fold: the last two reviews in log order (c on day 7: 0.9; d on day 13:
    # 0.9 ** 2, forgotten)
    assert result.evaluated == 2
    expected = log_loss([True, False], [0.9, 0.81])
    assert result.score("SM-2").log_loss == pytest.approx(expected)


def test_the_tensor_fsrs_is_py_fsrs_as_the_product_runs_it(public_log):
    """scheduler/fsrs_fit.py's batch code against scheduler/fsrs_review.py (py-fsrs's own
    formulas) on the public log, with the defaults and with other parameters."""
    cards, _ = by_card(public_log)
    cards = [history for history in cards if len(history) >= 2][:300]
    sequences = fit_sequences(cards, len(public_log))
    other = list(scheduler_with().parameters)
    other[8], other[9], other[17], other[20] = 1.2, 0.3, 0.9, 0.35
    for parameters in (None, other):
        scheduler = scheduler_with(*([] if parameters is None else [parameters]))
        predicted = fsrs_fit.predict(sequences, *([] if parameters is None else [parameters]))
        for seq, p in zip(sequences, predicted, strict=True):
            memory = None
            for step, (elapsed, rating) in enumerate(zip(seq.elapsed, seq.ratings,
                                                         strict=True)):
                if step:
                    assert p[step] == pytest.approx(
                        recall_after(memory[0], elapsed, scheduler), rel=1e-12)
                memory = next_memory(memory, rating, elapsed, scheduler)


def test_the_pyfsrs_csv_counts_24_hour_days_as_py_fsrs_does_and_is_sorted_by_time():
    rows = [{"card_id": "x", "review_rating": "3", "review_time": "2024-03-31T03:58:00Z"},
            {"card_id": "x", "review_rating": "1", "review_time": "2024-03-30T04:00:00+00:00"},
            {"card_id": "x", "review_rating": "2", "review_time": "2024-04-01T04:00:00+00:00"},
            {"card_id": "y", "review_rating": "4", "review_time": "2024-03-30T05:00:00+02:00"}]
    reviews = reviews_from_pyfsrs_csv(rows)
    start = datetime(2024, 3, 30, 3, tzinfo=UTC).timestamp() / 86_400
    assert [(r.card, round((r.day - start) * 24 * 60), r.rating, r.quality, r.recalled)
            for r in reviews] == [("y", 0, 4, 5, True), ("x", 60, 1, 2, False),
                                  ("x", 24 * 60 + 58, 3, 4, True),
                                  ("x", 49 * 60, 2, 3, True)]
    # 23 h 58 min after the first: the same day; the third a day (1 d 2 min) after the second
    _, scored = by_card(reviews)
    assert [(s.pos, s.elapsed) for s in scored] == [(3, 1)]
    with pytest.raises(ValueError, match="line 2"):
        reviews_from_pyfsrs_csv([{"card_id": "x", "review_rating": "5",
                                  "review_time": "2024-03-30T04:00:00"}])


# -- the public log -------------------------------------------------------------------------

def test_on_the_public_log_fsrs_default_predicts_better_than_sm2(public_log):
    """The README's numbers (`tutor fsrs evaluate --csv ... --no-fit`)."""
    result = evaluate(public_log, fit=False)
    assert (result.reviews, result.cards, result.evaluated) == (12_580, 1_205, 4_440)
    sm2, fsrs = result.score("SM-2"), result.score("FSRS-6 default")
    assert sm2.log_loss == pytest.approx(0.5014, abs=5e-5)
    assert fsrs.log_loss == pytest.approx(0.4400, abs=5e-5)
    assert fsrs.log_loss < sm2.log_loss and fsrs.rmse_bins < sm2.rmse_bins
    assert fsrs.auc > sm2.auc


def test_on_the_public_log_fitted_fsrs_predicts_better_than_default(public_log):
    """Five fits (one per fold), seconds each."""
    result = evaluate(public_log)
    default, fitted = result.score("FSRS-6 default"), result.score("FSRS-6 fitted")
    assert fitted.log_loss <= default.log_loss and fitted.rmse_bins <= default.rmse_bins
    assert result.score("SM-2, fitted curve").log_loss > default.log_loss
    assert result.fitted is not None and len(result.fitted) == 21
    assert result.fitted != tuple(scheduler_with().parameters)


def test_too_few_reviews_to_fit_keep_the_default_parameters():
    log = [Review.rated(card, day, 3) for card in range(30) for day in (0, 1, 3)]
    sequences = fit_sequences(by_card(log)[0], len(log))
    assert sum(sum(s.scored) for s in sequences) == 60
    assert fsrs_fit.fit(sequences) == tuple(scheduler_with().parameters)
