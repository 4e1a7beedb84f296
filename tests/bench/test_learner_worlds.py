"""The simulated learner's second world (ACT-R, issue 39.3) and the belief model of a
misconception with its paired remediation study (issue 39.4): bot/bench/sim/."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest

from bot.bench.learning import run_learning
from bot.bench.sim import memory_actr
from bot.bench.sim.deck import SimCard, Slot
from bot.bench.sim.learner import LearnerModel, Profile, SimLearner
from bot.bench.sim.memory import FSRS45_WEIGHTS, Memory, retrievability
from bot.bench.sim.memory_actr import ActrMemory, psychological_age
from bot.bench.sim.policies import POLICIES
from bot.bench.sim.remediation_study import (
    ARMS,
    StudyConfig,
    interval,
    paired_study,
    probe_copies,
    synthetic_deck,
)
from bot.bench.sim.run import SimConfig, simulate
from bot.bench.sim.worlds import WORLDS
from tests.helpers.paths import REPO

# -- the ACT-R world ------------------------------------------------------------------------


def test_actr_recall_falls_with_time_and_rises_with_practice():
    memory = ActrMemory.first(False, 0.5)
    curve = [memory.recall_probability(0.5 + t) for t in (0.001, 1, 2, 7, 30, 90)]
    assert curve == sorted(curve, reverse=True) and curve[-1] < 0.3
    practised = ActrMemory.first(False, 0.5)
    for day in (1.5, 3.5, 7.5):
        practised.exposed(True, day)
    assert practised.recall_probability(37.5) > memory.recall_probability(37.5) + 0.2


def test_actr_is_pavlik_and_andersons_model_with_the_papers_parameters():
    assert (memory_actr.A, memory_actr.C, memory_actr.TAU, memory_actr.S, memory_actr.H) == (
        0.177, 0.217, -0.704, 0.255, 0.025)
    one = ActrMemory(beta=0.0)
    one.exposed(False, 0.0)
    assert one.traces == [(0.0, memory_actr.A)]  # the first trace decays at a
    age = 0.01 * 86_400
    m = -memory_actr.A * math.log(age)
    assert one.activation(0.01) == pytest.approx(m)
    assert one.recall_probability(0.01) == pytest.approx(
        1 / (1 + math.exp((memory_actr.TAU - m) / memory_actr.S)))
    one.exposed(False, 0.01)  # the second decays by the activation it met
    assert one.traces[1][1] == pytest.approx(memory_actr.C * math.exp(m) + memory_actr.A)
    # Between sessions time runs at h; within one at full speed.
    assert psychological_age(0.5, 0.6) == pytest.approx(0.1 * 86_400)
    assert psychological_age(0.5, 1.5) == pytest.approx(0.025 * 86_400)


def test_actr_beta_matches_the_fsrs_world_a_day_after_a_first_miss():
    fsrs = retrievability(1.0, FSRS45_WEIGHTS[0])
    assert ActrMemory.first(False, 0.5).recall_probability(1.5) == pytest.approx(fsrs)
    assert Memory.first(False, 0.5).recall_probability(1.5) == pytest.approx(fsrs)


def test_actr_shows_the_spacing_effect():
    massed, spaced = ActrMemory.first(False, 0.5), ActrMemory.first(False, 0.5)
    for i in range(1, 4):
        massed.exposed(True, 0.5 + i * 0.001)  # within the session, a minute or so apart
        spaced.exposed(True, 0.5 + i)  # a day apart
    assert spaced.recall_probability(30.5) > massed.recall_probability(30.5)


def test_the_learning_bench_runs_in_either_world():
    assert set(WORLDS) == {"fsrs", "actr"}
    with pytest.raises(ValueError):
        LearnerModel(world="hlr")
    deck = [choice(f"c{i}", f"m{i}") for i in range(4)]
    config = SimConfig(learners=5, days=20, seed=2, new_per_day=4)
    actr = replace(LearnerModel(), world="actr")
    one = simulate(POLICIES["fsrs"], deck, config, actr, keep_log=True)
    assert one.log == simulate(POLICIES["fsrs"], deck, config, actr, keep_log=True).log
    assert one.retention != simulate(POLICIES["fsrs"], deck, config).retention
    report = run_learning(SimConfig(learners=3, days=10), model=actr)
    assert report["world"] == "actr" and "Pavlik" in report["memory_model"]["name"]


# -- the belief model -----------------------------------------------------------------------


def choice(card_id: str, mistake: str) -> SimCard:
    """Four options: "z" right, "lure" for ``mistake``, two slips of this card alone."""
    return SimCard(card_id, "medium", (Slot(None, ("z", "lure", "s1", "s2"), "z", {
        "lure": mistake, "s1": f"{card_id}/s1", "s2": f"{card_id}/s2"}),))


BELIEFS = replace(LearnerModel(), beliefs="memory", prior=(("medium", 0.0),))
A, B, PROBE = choice("a", "m"), choice("b", "m"), choice("probe", "m")


def believer(model: LearnerModel = BELIEFS, seed: int = 1) -> SimLearner:
    profile = Profile(0, 1.0, 1.0, 0.0, frozenset({"m"}))
    return SimLearner(profile, model, {"a": 1.0, "b": 1.0, "probe": 1.0}, seed)


@pytest.mark.parametrize("world", ["fsrs", "actr"])
def test_a_belief_persists_until_explained_and_comes_back_as_the_correction_fades(world):
    learner = believer(replace(BELIEFS, world=world))
    assert learner.active_probability("m", 0.0) == 1.0
    assert learner.lure_probability(PROBE, "m", 0.0) == 1.0  # no recall: the lure, always
    answer = learner.answer(A, 0.5)
    assert answer.picks[0] == ("lure",) and "m" in answer.shown
    assert "m" in learner.corrections  # the explanation starts a correction
    soon, later = (learner.lure_probability(PROBE, "m", t) for t in (1.5, 40.5))
    assert soon < later < 1.0  # shared by the unseen card, and forgotten again
    assert learner.active_probability("other", 1.5) == 0.0


@pytest.mark.parametrize("world", ["fsrs", "actr"])
def test_a_remedy_lowers_the_lure_rate_in_the_teaching_world_and_not_in_the_control(world):
    results = {}
    for teaches in (True, False):
        model = replace(BELIEFS, world=world, remedies_teach=teaches)
        with_remedy, without = believer(model), believer(model)
        for learner in (with_remedy, without):
            learner.answer(A, 0.5)  # chooses the lure: the explanation
        with_remedy.answer(B, 1.5, remedy=True)
        results[teaches] = (with_remedy.lure_probability(PROBE, "m", 6.5),
                            without.lure_probability(PROBE, "m", 6.5))
    assert results[True][0] < results[True][1] - 0.05
    assert results[False][0] == results[False][1]


def test_the_static_model_is_the_default_and_ignores_corrections():
    learner = SimLearner(Profile(0, 1.0, 1.0, 0.0, frozenset({"m"})),
                         replace(LearnerModel(), prior=(("medium", 0.0),), fix_probability=0.0),
                         {"a": 1.0, "probe": 1.0}, 1)
    learner.answer(A, 0.5)
    assert learner.corrections == {} and learner.held == {"m"}
    assert learner.lure_probability(PROBE, "m", 9.0) == 1.0
    assert LearnerModel().beliefs == "static" and LearnerModel().world == "fsrs"


def test_a_fixed_session_length_stops_serving():
    deck = [choice(f"c{i}", f"m{i}") for i in range(30)]
    free = simulate(POLICIES["sm2-ours"], deck, SimConfig(learners=3, days=3, seed=1))
    bounded = simulate(POLICIES["sm2-ours"], deck,
                       SimConfig(learners=3, days=3, seed=1, session_s=60.0))
    assert free.cut_days == 0 and bounded.cut_days > 0
    assert bounded.reviews < free.reviews and bounded.session_ms < free.session_ms


# -- the paired measurement -----------------------------------------------------------------


def test_interval_is_the_mean_with_a_95_percent_normal_interval():
    result = interval([1.0, 2.0, 3.0, 4.0])
    half = 1.959964 * math.sqrt(5 / 3) / 2
    assert result.mean == 2.5 and result.n == 4
    assert (result.low, result.high) == pytest.approx((2.5 - half, 2.5 + half))
    assert math.isnan(interval([1.0]).low) and interval([]).n == 0


def test_the_paired_study_returns_intervals_for_every_arm_and_difference():
    cards, probes, misconceptions = synthetic_deck(misconceptions=4, cards_each=2)
    assert len(cards) == 8 and len(probes) == 8 and misconceptions == ["m0", "m1", "m2", "m3"]
    assert all(sum(m in c.mistake_ids for c in cards) == 2 for m in misconceptions)
    config = StudyConfig(learners=8, days=12, session_s=240.0, days_measured=(4, 12))
    report = paired_study(cards, probes, config, misconceptions)
    assert report["config"]["tested_by_one_card"] == 0
    assert set(report["measures"]) == {f"{m}_day{d}" for m in ("lure", "active",
                                                                "other_retention")
                                       for d in (4, 12)}
    for measure in report["measures"].values():
        assert set(measure) == {*ARMS, "on-off", "control-off", "reorder-off"}
        for value in measure.values():
            if value["n"] > 1:
                low, high = value["ci95"]
                assert low <= value["mean"] <= high
    assert report["arms"]["on"]["serves"].get("remedy", 0) > 0
    assert "remedy" not in report["arms"]["reorder"]["serves"]
    copies = probe_copies(cards)
    assert [c.id for c in copies] == [f"probe/{c.id}" for c in cards]


def test_bench_remediation_reports_both_decks_in_the_world_asked_for():
    result = subprocess.run(
        [sys.executable, "-m", "bot", "bench", "remediation", "--json", "-n", "4", "--world",
         "actr"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["benchmark"] == "remediation" and report["world"] == "actr"
    assert report["learner_model"]["beliefs"] == "memory"
    assert set(report["decks"]) == {"synthetic", "bundled"}
    bundled = report["decks"]["bundled"]["config"]
    assert bundled["learners"] == 4 and bundled["tested_by_one_card"] > 0
    assert report["decks"]["synthetic"]["measures"]["lure_day90"]["on-off"]["n"] > 0


def test_actr_exposures_at_one_instant_stay_finite():
    """One answer can explain a mistake several times at the same moment; an easy learner's
    trace ages slower, but never below a second: the activation stays bounded."""
    memory = ActrMemory.first(False, 0.5, ease=3.0)
    for _ in range(30):
        memory.exposed(False, 0.5)
    assert memory.activation(0.5) <= memory.beta + math.log(31) + 1e-9
    assert 0 < memory.recall_probability(0.6) <= 1
