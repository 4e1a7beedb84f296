"""Fit one Discord server's FSRS-6 parameters, and decide whether they may be applied.

The pure part of the per-server fit (no database, no Discord): storage, the weekly job, the
fit command and the admin panel call it with values.

- **Floor.** No fit below FLOOR_REVIEWS scheduling reviews over FLOOR_DAYS days: a small
  server's fit learns its noise, and the penalty towards the defaults (scheduler/fsrs_fit.py)
  only softens that.
- **Held out.** The evaluated reviews (scheduler/evaluation.py `by_card`) in time order; the
  most recent fifth (HELD_OUT) judges, the fit is trained on everything logged before it.
  The most recent reviews are the ones the new parameters would next schedule like.
- **Gate.** A fit is applied only when its held-out log loss beats both the parameters in
  force and the defaults by more than Z standard errors of the gain; the error is
  cluster-robust with learners as clusters (`clustered_gain`).
- **What it changes**, for admins: the intervals a new card gets (`interval_changes`) and
  the daily workload of the cards as they stand (`workload`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta

from fsrs import Rating, Scheduler
from fsrs.scheduler import DEFAULT_PARAMETERS

from scheduler import fsrs_fit
from scheduler.evaluation import (
    Review,
    auc,
    by_card,
    fit_sequences,
    fsrs_predictions,
    log_loss,
    rmse_bins,
)
from scheduler.fsrs_review import next_memory, scheduler_with

__all__ = ["FLOOR_DAYS", "FLOOR_REVIEWS", "GROWTH", "HELD_OUT", "REFIT_DAYS", "Z", "Gate",
           "IntervalChange", "ServerFit", "Workload", "clustered_gain", "fit_due",
           "fit_server", "floor_refusal", "interval_changes", "workload"]

FLOOR_REVIEWS = 2_000  # scheduling reviews
FLOOR_DAYS = 30  # days from the first review to the last
HELD_OUT = 0.2  # the most recent fifth of evaluated reviews
Z = 1.96  # how many standard errors the improvement must exceed
GROWTH = 1.2  # refit only when reviews grew by a fifth since the last attempt
REFIT_DAYS = 7

DEFAULTS = tuple(float(w) for w in DEFAULT_PARAMETERS)
IN_FORCE, VS_DEFAULTS = "in force", "defaults"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def floor_refusal(reviews: int, days: int) -> str | None:
    """None when a fit may run; else a short sentence for an admin."""
    if reviews >= FLOOR_REVIEWS and days >= FLOOR_DAYS:
        return None
    return (f"needs {FLOOR_REVIEWS:,} reviews over {FLOOR_DAYS} days; this server has "
            f"{reviews:,} over {_plural(days, 'day')}")


def fit_due(reviews: int, days: int, last_attempt_reviews: int | None,
            last_attempt_at: datetime | None, now: datetime) -> bool:
    """The background job's rule: the floor is met, and there was no earlier attempt, or the
    last one is at least REFIT_DAYS old and reviews grew by GROWTH since (a refit on much
    the same log would find much the same parameters)."""
    if floor_refusal(reviews, days) is not None:
        return False
    if last_attempt_at is None:
        return True
    grown = reviews >= (last_attempt_reviews or 0) * GROWTH - 1e-9
    return now - last_attempt_at >= timedelta(days=REFIT_DAYS) and grown


def clustered_gain(losses_a: Sequence[float], losses_b: Sequence[float],
                   clusters: Sequence[Hashable]) -> tuple[float, float]:
    """The mean of ``losses_a - losses_b`` (positive: b's losses are lower) and its
    cluster-robust standard error, ``clusters`` naming each review's learner.

    One learner's reviews are correlated (the same memory, the same habits), so the
    per-review error sqrt(var d / n) would be too small; the clustered one sums the
    deviations within each cluster first: sqrt(G / (G - 1) * sum_g (sum_{i in g}
    (d_i - mean))^2) / n, G clusters, n reviews."""
    n = len(losses_a)
    if not n or len(losses_b) != n or len(clusters) != n:
        raise ValueError("need as many losses of each kind and clusters, at least one")
    d = [a - b for a, b in zip(losses_a, losses_b, strict=True)]
    mean = sum(d) / n
    sums: dict[Hashable, float] = {}
    for di, g in zip(d, clusters, strict=True):
        sums[g] = sums.get(g, 0.0) + di - mean
    g = len(sums)
    if g < 2:
        raise ValueError("a clustered standard error needs at least 2 clusters")
    return mean, math.sqrt(g / (g - 1) * sum(s * s for s in sums.values())) / n


@dataclass(frozen=True)
class Gate:
    versus: str  # "in force" or "defaults"
    candidate_loss: float  # held-out log loss of the fitted parameters
    other_loss: float  # held-out log loss of the parameters compared against
    gain: float  # other_loss - candidate_loss (positive: the fit is better)
    standard_error: float  # of `gain`: cluster-robust, learners as clusters
    passed: bool  # gain > Z * standard_error


@dataclass(frozen=True)
class ServerFit:
    """One fit attempt: what it saw, what it found, how it was judged. ``refused``: the
    sentence for an admin when no fit ran (``parameters`` None, no scores, no gates)."""

    reviews: int
    days: int
    learners: int
    trained: int  # evaluated reviews the fit was trained on
    held_out: int  # evaluated reviews it was judged on
    parameters: tuple[float, ...] | None  # None when refused
    in_force: tuple[float, ...]  # what it was compared with (defaults when none)
    scores: dict[str, dict[str, float | None]]  # "fitted", "in force", "defaults"
    gates: tuple[Gate, ...]
    refused: str | None = None

    @property
    def passed(self) -> bool:
        return self.refused is None and bool(self.gates) and all(g.passed for g in self.gates)

    def as_dict(self) -> dict:
        """Plain JSON values (stored in the database); `from_dict` reads them back equal."""
        d = asdict(self)
        d["parameters"] = None if self.parameters is None else list(self.parameters)
        d["in_force"] = list(self.in_force)
        d["gates"] = [asdict(g) for g in self.gates]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ServerFit:
        return cls(
            reviews=d["reviews"], days=d["days"], learners=d["learners"],
            trained=d["trained"], held_out=d["held_out"],
            parameters=None if d["parameters"] is None else tuple(d["parameters"]),
            in_force=tuple(d["in_force"]),
            scores={k: dict(v) for k, v in d["scores"].items()},
            gates=tuple(Gate(**g) for g in d["gates"]), refused=d.get("refused"))


def _span(reviews: Sequence[Review]) -> int:
    return math.floor(reviews[-1].day - reviews[0].day) + 1 if reviews else 0


def fit_server(reviews: Sequence[Review], in_force: Sequence[float] | None = None, *,
               epochs: int = fsrs_fit.EPOCHS,
               learner_of: Callable[[Hashable], Hashable] = lambda card: card[0]) -> ServerFit:
    """Fit FSRS-6 to a server's scheduling ``reviews`` (in time order; ``learner_of`` a
    card key's learner) and judge the fit against ``in_force`` (None: the defaults) and the
    defaults on the held-out reviews. Below the floor nothing is fitted."""
    force = DEFAULTS if in_force is None else tuple(float(w) for w in in_force)
    days = _span(reviews)
    learners = len({learner_of(r.card) for r in reviews})

    def refused(sentence: str, trained: int = 0, held_out: int = 0) -> ServerFit:
        return ServerFit(len(reviews), days, learners, trained, held_out, None, force, {}, (),
                         sentence)

    sentence = floor_refusal(len(reviews), days)
    if sentence is not None:
        return refused(sentence)
    cards, items = by_card(reviews)
    cut = math.floor(len(items) * (1 - HELD_OUT))
    held = items[cut:]
    who = [learner_of(cards[item.card][0][1].card) for item in held]
    if len(set(who)) < 2:
        return refused(f"the most recent fifth of its reviews comes from "
                       f"{_plural(len(set(who)), 'learner')}; a fair comparison needs 2 or more",
                       cut, len(held))
    fitted = fsrs_fit.fit(fit_sequences(cards, held[0].pos), epochs=epochs)
    y = [item.recalled for item in held]
    named = {"fitted": fitted, IN_FORCE: force, VS_DEFAULTS: DEFAULTS}
    scores, losses = {}, {}
    for name, parameters in named.items():
        by_pos = fsrs_predictions(cards, held, parameters)
        p = [by_pos[item.pos] for item in held]
        losses[name] = [log_loss([yi], [pi]) for yi, pi in zip(y, p, strict=True)]
        scores[name] = {
            "log_loss": sum(losses[name]) / len(held),
            "rmse_bins": rmse_bins(y, p, [i.elapsed for i in held], [i.reps for i in held],
                                   [i.lapses for i in held]),
            "auc": auc(y, p)}
    gates = []
    for versus in ((IN_FORCE, VS_DEFAULTS) if force != DEFAULTS else (VS_DEFAULTS,)):
        gain, se = clustered_gain(losses[versus], losses["fitted"], who)
        gates.append(Gate(versus, scores["fitted"]["log_loss"], scores[versus]["log_loss"],
                          gain, se, gain > Z * se))
    return ServerFit(len(reviews), days, learners, cut, len(held), fitted, force, scores,
                     tuple(gates))


# -- what a fit changes ---------------------------------------------------------------------

@dataclass(frozen=True)
class IntervalChange:
    ratings: str  # e.g. "Good, Good"
    before: int  # days until the next review under the parameters in force
    after: int  # under the fitted ones


RATING_RUNS = ((Rating.Good,), (Rating.Good,) * 2, (Rating.Good,) * 3, (Rating.Hard,),
               (Rating.Again,), (Rating.Again, Rating.Good))


def _last_interval(ratings: Sequence[Rating], parameters: Sequence[float]) -> int:
    scheduler = scheduler_with(parameters)
    memory, interval = None, 0
    for rating in ratings:
        memory = next_memory(memory, rating, interval, scheduler)
        interval = scheduler._next_interval(stability=memory[0])
    return interval


def interval_changes(before: Sequence[float], after: Sequence[float]) -> list[IntervalChange]:
    """A new card reviewed with these ratings, each review on the day it falls due: the
    interval the last review sets, under each parameter set (the product's scheduler,
    scheduler/fsrs_review.py)."""
    return [IntervalChange(", ".join(r.name for r in run), _last_interval(run, before),
                           _last_interval(run, after)) for run in RATING_RUNS]


@dataclass(frozen=True)
class Workload:
    days: int
    before_per_day: float
    after_per_day: float


def _reviews_within(stability: float, difficulty: float, last: date, due: date, end: date,
                    scheduler: Scheduler) -> int:
    """Reviews from ``due`` until before ``end``, each recalled (Good) on its due day."""
    count, memory = 0, (stability, difficulty)
    while due < end:
        count += 1
        memory = next_memory(memory, Rating.Good, (due - last).days, scheduler)
        last, due = due, due + timedelta(days=scheduler._next_interval(stability=memory[0]))
    return count


def workload(states: Iterable[tuple[float, float, date, date]], today: date,
             before: Sequence[float], after: Sequence[float], days: int = 30) -> Workload:
    """Reviews a day over the next ``days`` days for these card states (stability,
    difficulty, last review day, due day), if every review is recalled (rated Good) on its
    due day: the next review stays on its stored due day under both (a new parameter set
    changes no stored due day; one already past counts today), the intervals after it
    follow each parameter set."""
    end = today + timedelta(days=days)
    schedulers = scheduler_with(before), scheduler_with(after)
    counts = [0, 0]
    for stability, difficulty, last, due in states:
        due = max(due, today)
        for k, scheduler in enumerate(schedulers):
            counts[k] += _reviews_within(stability, difficulty, last, due, end, scheduler)
    return Workload(days, counts[0] / days, counts[1] / days)
