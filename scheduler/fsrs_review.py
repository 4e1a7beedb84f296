"""FSRS beside SM-2: one card's FSRS memory state moved by the `fsrs` package (py-fsrs).

Kept to the product's calendar, like scheduler/sm2.py:

- time is the learner's *study day*: each review is given to py-fsrs at that day's midnight
  UTC, so elapsed time is whole study days and a timezone change neither skips nor doubles;
- no intra-day learning or relearning steps: the same-day repeat is rule 7's drill (which
  moves no state, for either scheduler), so every review schedules at least a day ahead;
- no fuzz: the state must be a pure function of the review log (switching schedulers replays
  it, scheduler/replay.py), and py-fsrs's fuzz draws from the global `random`.

Ratings come from the same auto-graded quality as SM-2 (scheduler/grading.py), so a guess
by elimination is no more a recall for FSRS than for SM-2:

    quality 0, 1, 2 (attempt 2 or 3, never right, or right after a hint)  -> Again
    quality 3       (first try, no hint, slower than a minute)            -> Hard
    quality 4, 5    (first try, no hint, within a minute)                 -> Good

Never Easy: py-fsrs's Easy multiplies stability by w16 (~1.9), meant for a learner who
judges a card too easy; a fast click on a multiple-choice card is not that judgement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import lru_cache

from fsrs import Card, Rating, Scheduler, State
from fsrs.scheduler import DEFAULT_PARAMETERS

from scheduler.sm2 import check_quality

__all__ = ["DESIRED_RETENTION", "FSRSState", "next_memory", "rating_for", "recall_after",
           "review_fsrs", "scheduler_with"]

DESIRED_RETENTION = 0.9


def scheduler_with(parameters: Sequence[float] = DEFAULT_PARAMETERS) -> Scheduler:
    """py-fsrs's scheduler as the product runs it (no learning steps, no fuzz), with these
    parameters: the defaults, a server's fitted ones (scheduler/server_fit.py), or those of
    an evaluation (scheduler/evaluation.py). One per parameter set, kept: a server's
    parameters are looked up on every answer."""
    return _scheduler(tuple(float(w) for w in parameters))


@lru_cache(maxsize=256)
def _scheduler(parameters: tuple[float, ...]) -> Scheduler:
    return Scheduler(parameters=parameters, desired_retention=DESIRED_RETENTION,
                     learning_steps=(), relearning_steps=(), enable_fuzzing=False)


_SCHEDULER = scheduler_with()


@dataclass(frozen=True, slots=True)
class FSRSState:
    """One card's FSRS memory: stability (days until recall falls to 90 %), difficulty
    (1..10) and the study day of the last review that moved them."""

    stability: float
    difficulty: float
    last_day: date


def rating_for(quality: int) -> Rating:
    q = check_quality(quality)
    if q < 3:
        return Rating.Again
    return Rating.Hard if q == 3 else Rating.Good


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def review_fsrs(state: FSRSState | None, quality: int, day: date,
                scheduler: Scheduler = _SCHEDULER) -> tuple[FSRSState, int]:
    """Apply one graded review on study day ``day`` (``state`` None: the card's first) with
    ``scheduler``'s parameters (default: py-fsrs's); the new state and the interval in days
    (>= 1). A day before the last review (the learner moved their calendar back) counts as
    the same day.

    The steps `Scheduler.review_card` takes for our scheduler (no learning or relearning
    steps, no fuzz: a card is new or in review), through the same formulas, without its
    Card copies and datetimes: a sixth of a graded answer's CPU went there. Tests hold it
    equal to `review_card` (tests/engine/test_schedulers.py)."""
    rating = rating_for(quality)
    if state is None:
        stability, difficulty = next_memory(None, rating, 0, scheduler)
    else:
        if day < state.last_day:
            day = state.last_day
        stability, difficulty = next_memory((state.stability, state.difficulty), rating,
                                            (day - state.last_day).days, scheduler)
    return FSRSState(stability, difficulty, day), scheduler._next_interval(stability=stability)


def next_memory(memory: tuple[float, float] | None, rating: Rating, elapsed: int,
                scheduler: Scheduler = _SCHEDULER) -> tuple[float, float]:
    """(stability, difficulty) after a review rated ``rating``, ``elapsed`` whole days after
    the card's last review (``memory``, its (stability, difficulty) then; None: the card's
    first review). A review the same day (elapsed < 1) moves short-term stability."""
    if memory is None:
        return (scheduler._initial_stability(rating=rating),
                scheduler._initial_difficulty(rating=rating, clamp=True))
    stability, difficulty = memory
    if elapsed < 1:
        stability = scheduler._short_term_stability(stability=stability, rating=rating)
    else:
        stability = scheduler._next_stability(
            difficulty=difficulty, stability=stability,
            retrievability=recall_after(stability, elapsed, scheduler), rating=rating)
    return stability, scheduler._next_difficulty(difficulty=difficulty, rating=rating)


def recall_after(stability: float, elapsed: float, scheduler: Scheduler = _SCHEDULER) -> float:
    """FSRS's probability of recall ``elapsed`` days after a review that left ``stability``."""
    return (1 + scheduler._FACTOR * elapsed / stability) ** scheduler._DECAY


def review_card_fsrs(state: FSRSState | None, quality: int,
                     day: date) -> tuple[FSRSState, int]:
    """`review_fsrs` through py-fsrs's public `review_card`: what it must equal."""
    if state is not None and day < state.last_day:
        day = state.last_day
    at = _midnight(day)
    if state is None:
        card = Card(card_id=0, due=at)  # card_id given: py-fsrs would sleep 1 ms for one
    else:
        card = Card(card_id=0, state=State.Review, step=None, stability=state.stability,
                    difficulty=state.difficulty, due=at, last_review=_midnight(state.last_day))
    after, _ = _SCHEDULER.review_card(card, rating_for(quality), review_datetime=at)
    return FSRSState(after.stability, after.difficulty, day), (after.due - at).days


def retrievability(state: FSRSState, day: date) -> float:
    """FSRS's predicted chance of recall on ``day``."""
    card = Card(card_id=0, state=State.Review, step=None, stability=state.stability,
                difficulty=state.difficulty, due=_midnight(day),
                last_review=_midnight(state.last_day))
    return _SCHEDULER.get_card_retrievability(card, current_datetime=_midnight(day))
