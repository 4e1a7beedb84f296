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

from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from fsrs import Card, Rating, Scheduler, State

from scheduler.sm2 import check_quality

__all__ = ["DESIRED_RETENTION", "FSRSState", "rating_for", "review_fsrs"]

DESIRED_RETENTION = 0.9
_SCHEDULER = Scheduler(desired_retention=DESIRED_RETENTION, learning_steps=(),
                       relearning_steps=(), enable_fuzzing=False)


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


def review_fsrs(state: FSRSState | None, quality: int, day: date) -> tuple[FSRSState, int]:
    """Apply one graded review on study day ``day`` (``state`` None: the card's first);
    the new state and the interval in days (>= 1). A day before the last review (the
    learner moved their calendar back) counts as the same day.

    The steps `Scheduler.review_card` takes for our scheduler (no learning or relearning
    steps, no fuzz: a card is new or in review), through the same formulas, without its
    Card copies and datetimes: a sixth of a graded answer's CPU went there. Tests hold it
    equal to `review_card` (tests/engine/test_schedulers.py)."""
    rating = rating_for(quality)
    if state is None:
        stability = _SCHEDULER._initial_stability(rating=rating)
        difficulty = _SCHEDULER._initial_difficulty(rating=rating, clamp=True)
    else:
        if day < state.last_day:
            day = state.last_day
        elapsed = (day - state.last_day).days
        if elapsed < 1:
            stability = _SCHEDULER._short_term_stability(stability=state.stability,
                                                         rating=rating)
        else:
            recall = (1 + _SCHEDULER._FACTOR * elapsed / state.stability) ** _SCHEDULER._DECAY
            stability = _SCHEDULER._next_stability(
                difficulty=state.difficulty, stability=state.stability,
                retrievability=recall, rating=rating)
        difficulty = _SCHEDULER._next_difficulty(difficulty=state.difficulty, rating=rating)
    return FSRSState(stability, difficulty, day), _SCHEDULER._next_interval(stability=stability)


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
