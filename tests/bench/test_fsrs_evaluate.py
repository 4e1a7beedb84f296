"""bot/bench/fsrs_evaluate.py: the simulated server's log and its grade maps (issue 39.5)."""

from __future__ import annotations

import pytest

from bot.bench.fsrs_evaluate import GRADE_MAPS, evaluate_simulated, simulated_log
from bot.bench.sim.deck import sim_cards
from bot.bench.sim.learner import Answer
from bot.bench.sim.policies import POLICIES
from bot.bench.sim.run import SimConfig, simulate
from content.loader import DeckLibrary
from scheduler.fsrs_review import rating_for


@pytest.fixture(scope="module")
def library() -> DeckLibrary:
    return DeckLibrary.load()


def _answer() -> Answer:
    return Answer((("a",),), (1000,), True, False, True, ())


@pytest.mark.parametrize(("name", "choice", "expected"), [
    ("ours", True, [1, 1, 1, 2, 3, 3]),
    ("first-try-good", True, [1, 1, 1, 3, 3, 3]),
    ("fast-easy", False, [1, 1, 1, 2, 3, 4]),
    ("choice-hard", True, [1, 1, 1, 2, 2, 2]),
    ("choice-hard", False, [1, 1, 1, 2, 3, 3]),
    ("second-try-hard", True, [1, 2, 1, 2, 3, 3]),
])
def test_grade_maps_by_quality(name, choice, expected):
    to_rating = GRADE_MAPS[name][1]
    assert [to_rating(q, _answer(), choice) for q in range(6)] == expected
    if name == "ours":
        assert expected == [int(rating_for(q)) for q in range(6)]


def test_the_log_is_the_scheduling_reviews_by_day(library):
    cards = sim_cards(library.cards(None))
    config = SimConfig(learners=3, days=10, seed=1)
    log = simulated_log(config, cards)
    served = simulate(POLICIES["sm2-ours"], cards, config, keep_log=True).log
    assert {e[3] for e in served} == {"new", "review", "drill"}
    assert sorted(log, key=lambda e: (e[0], e[1])) == \
        [(e[0], e[1], e[2], e[4], e[5]) for e in served if e[3] != "drill"]
    assert [(day, learner) for learner, day, *_ in log] == \
        sorted((day, learner) for learner, day, *_ in log)


def test_every_map_is_scored_on_the_same_outcomes(library):
    report = evaluate_simulated(12, days=30, seed=2, fit=False, library=library)
    maps = report["maps"]
    assert list(maps) == list(GRADE_MAPS)
    assert len({(m["reviews"], m["evaluated"]) for m in maps.values()}) == 1
    assert len({m["models"]["SM-2"]["log_loss"] for m in maps.values()}) == 1  # SM-2: qualities
    assert maps["ours"]["models"]["FSRS-6 default"] != maps["fast-easy"]["models"]["FSRS-6 default"]
