"""How well each scheduler predicts recall on a review log: srs-benchmark's method (issue 39.2).

What is followed (open-spaced-repetition/srs-benchmark: README "Evaluation",
features/base.py, utils.py `rmse_matrix`, models/sm2.py, models/fsrs_v6.py), in a simple form:

- **What is predicted.** A card's reviews in time order. A review a day or more after the
  card's previous review (whole days: study days in this product's log, 24-hour periods in
  an Anki log) is *evaluated*: each model predicts the probability of recall from
  the card's earlier reviews, and the outcome is whether it was recalled (rating above
  Again). A card's first review and same-day repeats are not evaluated (srs-benchmark:
  "same-day reviews are not used for evaluation"); FSRS still takes same-day repeats into
  its state (short-term stability), SM-2 ignores them, as srs-benchmark drops them for
  models without short-term input (and as the product's drills move no SM-2 state).
- **Time-series split** (sklearn's TimeSeriesSplit, 5 splits): the evaluated reviews in time
  order are cut into 6 equal folds; fold k (1..5) is predicted by models fitted on the
  reviews before it, and fold 0 is only trained on. Every model is scored on the same
  reviews, folds 1..5 together.
- **Metrics.** Log loss; AUC (the chance that a recalled review got a higher prediction than
  a forgotten one, ties counting half); RMSE(bins): the evaluated reviews grouped by interval
  (days since the last review), review number (srs-benchmark's `i`: 1 + the reviews on
  later days so far) and lapses (earlier reviews on a later day not recalled: rated Again,
  in srs-benchmark; the outcome, so that grade maps are binned alike), each on a
  logarithmic scale with srs-benchmark's bases (3.62, 1.89, 1.73); per bin the mean
  prediction against the recall rate, the root of the squared differences averaged with
  the bins' sizes as weights. (Older FSRS texts binned by predicted R; srs-benchmark bins
  by these three.) A log is one collection here, as one user's is in srs-benchmark.
- **Models.** *SM-2*: scheduler/sm2.py on each review's SM-2 quality (the product's own, or
  for an Anki log the rating + 1, as srs-benchmark's SM-2 does), with srs-benchmark's
  forgetting curve R = 0.9 ** (elapsed / interval): recall is 90 % when the interval SM-2 set
  is up. *SM-2, fitted curve*: R = 0.9 ** (k * elapsed / interval), k fitted on the training
  part (so only the curve's steepness is learnt, not SM-2's intervals). *FSRS-6 default*:
  py-fsrs 6.3.2 with its default parameters as the product runs it
  (scheduler/fsrs_review.py: whole days, no learning steps). *FSRS-6 fitted*: the same with
  parameters fitted on the training part (scheduler/fsrs_fit.py).

Left out from srs-benchmark: its outlier filter, pretraining FSRS's first four parameters,
and averaging over many users.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scheduler import fsrs_fit
from scheduler.fsrs_review import next_memory, rating_for, recall_after, scheduler_with
from scheduler.sm2 import NEW, review

__all__ = ["MODELS", "Evaluation", "Review", "Score", "Scored", "auc", "by_card", "evaluate",
           "fit_sequences", "fsrs_predictions", "log_loss", "reviews_from_log",
           "reviews_from_pyfsrs_csv", "rmse_bins", "time_series_folds"]

SPLITS = 5
MODELS = ("SM-2", "SM-2, fitted curve", "FSRS-6 default", "FSRS-6 fitted")
EPSILON = 1e-15  # predictions are clipped to [EPSILON, 1 - EPSILON] for the log loss


@dataclass(frozen=True, slots=True)
class Review:
    """One review of one card. ``day``: when, in days (a study day's number for this
    product; the elapsed time between two reviews counts whole days, rounded down);
    ``rating`` is FSRS's (1 Again .. 4 Easy), ``quality`` SM-2's (0..5), ``recalled`` the
    outcome."""

    card: Hashable
    day: float
    rating: int
    quality: int
    recalled: bool

    @classmethod
    def rated(cls, card: Hashable, day: float, rating: int) -> Review:
        """An Anki (py-fsrs) review: SM-2's quality is the rating + 1, as srs-benchmark's
        SM-2 takes it (Again 2, Hard 3, Good 4, Easy 5)."""
        if rating not in (1, 2, 3, 4):
            raise ValueError(f"rating must be 1..4, got {rating!r}")
        return cls(card, day, rating, rating + 1, rating > 1)

    @classmethod
    def graded(cls, card: Hashable, day: int, quality: int,
               to_rating: Callable[[int], int] = rating_for) -> Review:
        """A review of this product: its quality, the FSRS rating the product gives it
        (scheduler/fsrs_review.py `rating_for`, or another mapping), recalled when SM-2
        passes it (a first try without the hint)."""
        return cls(card, day, int(to_rating(quality)), quality, quality >= 3)


@dataclass(frozen=True, slots=True)
class Score:
    model: str
    log_loss: float
    rmse_bins: float
    auc: float | None


@dataclass(frozen=True)
class Evaluation:
    reviews: int
    cards: int
    evaluated: int  # reviews scored: folds 1..splits
    trained_only: int  # evaluated reviews of fold 0
    splits: int
    scores: tuple[Score, ...]
    fitted: tuple[float, ...] | None = None  # FSRS-6 fitted on all but the last fold
    sm2_curve: float | None = None  # k of the SM-2 curve fitted likewise
    wall_s: float = 0.0
    notes: dict = field(default_factory=dict)

    def score(self, model: str) -> Score:
        return next(s for s in self.scores if s.model == model)

    def as_dict(self) -> dict:
        return {
            "reviews": self.reviews, "cards": self.cards, "evaluated": self.evaluated,
            "trained_only": self.trained_only, "splits": self.splits,
            "models": {s.model: {"log_loss": round(s.log_loss, 4),
                                 "rmse_bins": round(s.rmse_bins, 4),
                                 "auc": None if s.auc is None else round(s.auc, 4)}
                       for s in self.scores},
            "fsrs_fitted_parameters": None if self.fitted is None
            else [round(w, 4) for w in self.fitted],
            "sm2_fitted_curve_k": None if self.sm2_curve is None else round(self.sm2_curve, 4),
            "wall_s": round(self.wall_s, 2),
            **self.notes,
        }


# -- metrics --------------------------------------------------------------------------------

def log_loss(recalled: Sequence[bool], predicted: Sequence[float]) -> float:
    """Mean binary cross-entropy, predictions clipped to [1e-15, 1 - 1e-15]."""
    if not recalled:
        raise ValueError("no reviews")
    total = 0.0
    for y, p in zip(recalled, predicted, strict=True):
        p = min(1 - EPSILON, max(EPSILON, p))
        total -= math.log(p) if y else math.log(1 - p)
    return total / len(recalled)


def auc(recalled: Sequence[bool], predicted: Sequence[float]) -> float | None:
    """Area under the ROC curve (Mann-Whitney, tied predictions counting half); None when
    every review was recalled, or none."""
    positives = sum(1 for y in recalled if y)
    negatives = len(recalled) - positives
    if not positives or not negatives:
        return None
    order = sorted(range(len(predicted)), key=predicted.__getitem__)
    rank_sum, i = 0.0, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and predicted[order[j + 1]] == predicted[order[i]]:
            j += 1
        mean_rank = (i + j) / 2 + 1  # ranks from 1, ties averaged
        rank_sum += mean_rank * sum(1 for k in order[i:j + 1] if recalled[k])
        i = j + 1
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def _log_bin(x: float, base: float, scale: float, digits: int) -> float:
    return round(scale * base ** math.floor(math.log(x) / math.log(base)), digits)


def rmse_bins(recalled: Sequence[bool], predicted: Sequence[float], elapsed: Sequence[float],
              reps: Sequence[int], lapses: Sequence[int]) -> float:
    """srs-benchmark's RMSE(bins) (utils.py `rmse_matrix`): bins by interval, review number
    and lapses on logarithmic scales; sqrt(sum n_b (recall_b - mean p_b)^2 / sum n_b)."""
    if not recalled:
        raise ValueError("no reviews")
    bins: dict[tuple, list[float]] = {}
    for y, p, t, i, lapse in zip(recalled, predicted, elapsed, reps, lapses, strict=True):
        key = (_log_bin(max(t, 1e-6), 3.62, 2.48, 2), _log_bin(i, 1.89, 1.99, 0),
               _log_bin(lapse, 1.73, 1.65, 0) if lapse else 0)
        acc = bins.setdefault(key, [0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += y
        acc[2] += p
    square = sum((ys - ps) ** 2 / n for n, ys, ps in bins.values())  # n * (ys/n - ps/n)^2
    return math.sqrt(square / len(recalled))


def time_series_folds(n: int, splits: int = SPLITS) -> list[tuple[int, int]]:
    """sklearn's TimeSeriesSplit(splits) on n samples: the (start, end) of each test fold;
    everything before a fold's start trains it."""
    if splits < 1:
        raise ValueError(f"splits must be >= 1, got {splits}")
    size = n // (splits + 1)
    if size == 0:
        raise ValueError(f"{n} evaluated reviews are too few for {splits} splits")
    return [(start, start + size) for start in range(n - splits * size, n, size)]


# -- the log, per card ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Scored:
    """An evaluated review: ``pos`` its place in the log, ``card`` and ``step`` where it
    is in its card's reviews, ``reps`` and ``lapses`` as srs-benchmark counts them."""

    pos: int
    card: int
    step: int
    elapsed: int
    reps: int
    lapses: int
    recalled: bool


def by_card(reviews: Sequence[Review]) -> tuple[list[list[tuple[int, Review]]], list[Scored]]:
    """The reviews per card, as (place in the log, review), and the evaluated ones."""
    index: dict[Hashable, int] = {}
    cards: list[list[tuple[int, Review]]] = []
    for pos, r in enumerate(reviews):
        if r.card not in index:
            index[r.card] = len(cards)
            cards.append([])
        cards[index[r.card]].append((pos, r))
    items = []
    for c, history in enumerate(cards):
        reps, lapses = 1, 0
        for step, ((pos, r), elapsed) in enumerate(zip(history, _elapsed(history),
                                                       strict=True)):
            if step == 0 or elapsed < 1:
                continue
            reps += 1
            items.append(Scored(pos, c, step, elapsed, reps, lapses, r.recalled))
            lapses += not r.recalled
    items.sort(key=lambda item: item.pos)
    return cards, items


def _elapsed(history: list[tuple[int, Review]]) -> list[int]:
    """Whole days since the card's previous review (a review logged before it: 0)."""
    out, last = [0], history[0][1].day
    for _, r in history[1:]:
        out.append(math.floor(max(0, r.day - last)))
        last = max(last, r.day)
    return out


def _sm2_ratios(cards, items) -> dict[int, float]:
    """elapsed / SM-2's interval before each evaluated review (by the review's pos)."""
    wanted = {item.pos for item in items}
    out = {}
    for history in cards:
        state = NEW
        for step, ((pos, r), elapsed) in enumerate(zip(history, _elapsed(history),
                                                       strict=True)):
            if step and elapsed < 1:
                continue  # a same-day repeat: SM-2 moves on the day's first review only
            if pos in wanted:
                out[pos] = elapsed / state.interval
            state = review(state, r.quality)
    return out


def fsrs_predictions(cards, items, parameters: Sequence[float] | None) -> dict[int, float]:
    """FSRS's recall before each evaluated review, as scheduler/fsrs_review.py moves it."""
    scheduler = scheduler_with() if parameters is None else scheduler_with(parameters)
    wanted = {item.pos for item in items}
    out = {}
    for history in cards:
        memory = None
        for (pos, r), elapsed in zip(history, _elapsed(history), strict=True):
            if pos in wanted:
                out[pos] = recall_after(memory[0], elapsed, scheduler)
            memory = next_memory(memory, r.rating, elapsed, scheduler)
    return out


def fit_sequences(cards, before: int) -> list[fsrs_fit.FitSequence]:
    """The cards' reviews logged before ``before``, as the fitter takes them."""
    sequences = []
    for history in cards:
        kept = [(pos, r) for pos, r in history if pos < before]
        if len(kept) < 2:
            continue
        elapsed = _elapsed(kept)
        sequences.append(fsrs_fit.FitSequence(
            tuple(elapsed), tuple(r.rating for _, r in kept),
            tuple(r.recalled for _, r in kept),
            tuple(step > 0 and e >= 1 for step, e in enumerate(elapsed))))
    return sequences


def _fit_curve(ratios: Sequence[float], recalled: Sequence[bool]) -> float:
    """k minimising the log loss of 0.9 ** (k * ratio): golden-section search on log k."""
    ln9 = math.log(0.9)

    def loss(u: float) -> float:
        k = math.exp(u)
        return log_loss(recalled, [math.exp(ln9 * k * x) for x in ratios])

    lo, hi = math.log(0.01), math.log(100.0)
    golden = (math.sqrt(5) - 1) / 2
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fa, fb = loss(a), loss(b)
    for _ in range(48):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - golden * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + golden * (hi - lo)
            fb = loss(b)
    return math.exp((lo + hi) / 2)


# -- the evaluation -------------------------------------------------------------------------

def evaluate(reviews: Sequence[Review], *, splits: int = SPLITS, fit: bool = True,
             epochs: int = fsrs_fit.EPOCHS) -> Evaluation:
    """Score SM-2, SM-2 with a fitted curve, FSRS-6 default and FSRS-6 fitted on
    ``reviews`` (in time order), as the module's docstring says. ``fit`` False: the two
    models without parameters only."""
    started = time.perf_counter()
    cards, items = by_card(reviews)
    folds = time_series_folds(len(items), splits)
    first = folds[0][0]
    test = items[first:]
    ratios = _sm2_ratios(cards, items)
    ln9 = math.log(0.9)
    predicted: dict[str, dict[int, float]] = {
        "SM-2": {pos: math.exp(ln9 * x) for pos, x in ratios.items()},
        "FSRS-6 default": fsrs_predictions(cards, test, None),
    }
    fitted = curve = None
    if fit:
        predicted["SM-2, fitted curve"], predicted["FSRS-6 fitted"] = {}, {}
        for start, end in folds:
            train, fold = items[:start], items[start:end]
            curve = _fit_curve([ratios[i.pos] for i in train], [i.recalled for i in train])
            predicted["SM-2, fitted curve"].update(
                {i.pos: math.exp(ln9 * curve * ratios[i.pos]) for i in fold})
            fitted = fsrs_fit.fit(fit_sequences(cards, items[start].pos), epochs=epochs)
            predicted["FSRS-6 fitted"].update(fsrs_predictions(cards, fold, fitted))
    y = [i.recalled for i in test]
    scores = []
    for model in MODELS:
        if model not in predicted:
            continue
        p = [predicted[model][i.pos] for i in test]
        scores.append(Score(model, log_loss(y, p),
                            rmse_bins(y, p, [i.elapsed for i in test], [i.reps for i in test],
                                      [i.lapses for i in test]),
                            auc(y, p)))
    return Evaluation(len(reviews), len(cards), len(test), first, splits, tuple(scores),
                      fitted, curve, time.perf_counter() - started)


# -- the product's review log --------------------------------------------------------------

def reviews_from_log(rows: Iterable) -> list[Review]:
    """The product's scheduling reviews (rows with learner_id, card_id, quality, study_day,
    restart, in the order recorded) as the evaluation and the fits read them: a card whose
    content changed (restart) starts over as a new card, as its schedule did."""
    restarts: dict[tuple, int] = {}
    out = []
    for r in rows:
        key = (r.learner_id, r.card_id)
        if r.restart:
            restarts[key] = restarts.get(key, 0) + 1
        out.append(Review.graded((*key, restarts.get(key, 0)), r.study_day.toordinal(),
                                 r.quality))
    return out


# -- py-fsrs's CSV review log ---------------------------------------------------------------

def reviews_from_pyfsrs_csv(rows: Iterable[dict]) -> list[Review]:
    """py-fsrs's test log format (card_id, review_rating 1..4, review_time ISO 8601,
    review_duration), in time order. The log gives no time zone, so days are py-fsrs's own
    (`Scheduler.get_card_retrievability`, the optimizer): whole 24-hour periods since the
    card's last review; less than 24 hours is a same-day review."""
    out = []
    for n, row in enumerate(rows, start=2):
        try:
            at = datetime.fromisoformat(row["review_time"])
            at = at if at.tzinfo else at.replace(tzinfo=UTC)
            out.append((at, n, Review.rated(row["card_id"], at.timestamp() / 86_400,
                                            int(row["review_rating"]))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"line {n}: {exc}: need card_id, review_rating (1-4) and "
                             "review_time (ISO 8601)") from None
    out.sort(key=lambda entry: entry[:2])
    return [r for _, _, r in out]
