"""The evaluation of scheduler/evaluation.py on a simulated server, under several ways of
turning an answer into an FSRS rating (issue 39.5): `tutor fsrs evaluate --sim`.

The server: `-n` learners (default 300) study the bundled deck's multiple-choice and fill-in
cards for 90 days under the product's defaults (SM-2 with our grade map: the `sm2-ours`
policy of bot/bench/sim/, seeded). Its review log is the scheduling reviews (new and due;
drills and remedies move no schedule, so the product's FSRS never sees them), graded by
scheduler/grading.py `quality_for` as the product grades them.

Each grade map below gives the same answers other FSRS ratings; the outcome predicted stays
the product's (a first try without the hint, right), so every map is scored on the same
outcomes and only what FSRS is told changes. SM-2 takes the qualities, which no map changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.bench.sim.deck import SimCard, sim_cards
from bot.bench.sim.learner import Answer
from bot.bench.sim.policies import POLICIES
from bot.bench.sim.run import SimConfig, simulate
from content.loader import DeckLibrary
from scheduler.evaluation import SPLITS, Evaluation, Review, evaluate
from scheduler.fsrs_review import rating_for

__all__ = ["GRADE_MAPS", "LEARNERS", "POLICY", "evaluate_simulated", "simulated_log"]

LEARNERS = 300
POLICY = "sm2-ours"
AGAIN, HARD, GOOD, EASY = 1, 2, 3, 4

# (quality, answer, multiple-choice card?) -> FSRS rating
GradeMap = Callable[[int, Answer, bool], int]


def _ours(quality: int, answer: Answer, choice: bool) -> int:
    return int(rating_for(quality))


def _first_try_good(quality: int, answer: Answer, choice: bool) -> int:
    return GOOD if quality >= 3 else AGAIN


def _fast_easy(quality: int, answer: Answer, choice: bool) -> int:
    return EASY if quality == 5 else _ours(quality, answer, choice)


def _choice_hard(quality: int, answer: Answer, choice: bool) -> int:
    return HARD if choice and quality >= 3 else _ours(quality, answer, choice)


def _second_try_hard(quality: int, answer: Answer, choice: bool) -> int:
    return HARD if quality == 1 else _ours(quality, answer, choice)


GRADE_MAPS: dict[str, tuple[str, GradeMap]] = {
    "ours": ("the product (scheduler/fsrs_review.py rating_for): attempt 2 or 3, never right "
             "or after the hint Again; a first try slower than a minute Hard; else Good",
             _ours),
    "first-try-good": ("every first try without the hint Good, however slow", _first_try_good),
    "fast-easy": ("as ours, but a first try within 20 s Easy", _fast_easy),
    "choice-hard": ("as ours, but a first try on a multiple-choice card Hard (a guess is "
                    "right 1 time in 4)", _choice_hard),
    "second-try-hard": ("as ours, but right on the second attempt Hard (a weak recall) "
                        "instead of Again", _second_try_hard),
}


def simulated_log(config: SimConfig, cards: list[SimCard]) -> list[tuple]:
    """The server's scheduling reviews in time order: (learner, day, card, quality, answer)."""
    outcome = simulate(POLICIES[POLICY], cards, config, keep_log=True)
    entries = [(day, learner, n, card, quality, answer)
               for n, (learner, day, card, kind, quality, answer) in enumerate(outcome.log)
               if kind in ("new", "review")]
    entries.sort(key=lambda e: e[:3])  # the log is learner by learner; a server's is by day
    return [(learner, day, card, quality, answer)
            for day, learner, _, card, quality, answer in entries]


def evaluate_simulated(learners: int = LEARNERS, *, days: int = 90, seed: int = 0,
                       maps: tuple[str, ...] = tuple(GRADE_MAPS), splits: int = SPLITS,
                       fit: bool = True,
                       library: DeckLibrary | None = None) -> dict:
    started = time.perf_counter()
    library = library or DeckLibrary.load()
    cards = sim_cards(library.cards(None))
    choice = {card.id: card.slots[0].key is None for card in cards}
    config = SimConfig(learners=learners, days=days, seed=seed)
    log = simulated_log(config, cards)
    results: dict[str, Evaluation] = {}
    for name in maps:
        to_rating = GRADE_MAPS[name][1]
        reviews = [Review((learner, card), day, to_rating(quality, answer, choice[card]),
                          quality, quality >= 3)
                   for learner, day, card, quality, answer in log]
        results[name] = evaluate(reviews, splits=splits, fit=fit)
    return {
        "source": f"simulated server: {learners} learners x {days} days, seed {seed}, "
                  f"policy {POLICY} (bot/bench/sim/), the bundled deck's {len(cards)} "
                  "multiple-choice and fill-in cards",
        "outcome": "a first try without the hint, right (the product's recall), for every map",
        "maps": {name: {"description": GRADE_MAPS[name][0], **results[name].as_dict()}
                 for name in maps},
        "wall_s": round(time.perf_counter() - started, 2),
    }
