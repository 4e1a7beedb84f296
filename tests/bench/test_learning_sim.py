"""The learning simulation (bot/bench/sim/): memory model, learner, policies (SM-2 or FSRS, with or
without remediation), and the direct driver held to the real engine's decisions."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from datetime import date

import pytest

from bot.bench.learning import run_learning
from bot.bench.sim.deck import SimCard, Slot, sim_cards
from bot.bench.sim.engine_policy import EnginePolicy
from bot.bench.sim.learner import Answer, LearnerModel, Profile, SimLearner
from bot.bench.sim.memory import FSRS45_WEIGHTS as W
from bot.bench.sim.memory import Memory, retrievability
from bot.bench.sim.policies import POLICIES, Pick, SimSchedule, naive_quality, ours_quality
from bot.bench.sim.run import SimConfig, percentile, simulate
from content.loader import DeckLibrary
from scheduler.fsrs_review import review_fsrs
from scheduler.remediation import REMEDIES_PER_DAY, REMEDIES_PER_MISTAKE, REMEDY_DELAY_DAYS


@pytest.fixture(scope="module")
def library() -> DeckLibrary:
    return DeckLibrary.load()


@pytest.fixture(scope="module")
def cards(library) -> list[SimCard]:
    return sim_cards(library.cards(None))


CHOICE = SimCard("d/choice", "medium", (Slot(None, ("a", "b", "c", "d"), "c",
                                              {"a": "m-a", "b": "m-b", "d": "m-d"}),))


DEFAULT_MODEL = LearnerModel()


def learner(held=(), model=DEFAULT_MODEL, ease=1.0, speed=1.0, hint=0.0, seed=1,
            card=CHOICE) -> SimLearner:
    profile = Profile(0, ease, speed, hint, frozenset(held))
    return SimLearner(profile, model, {card.id: 1.0}, seed)


# -- memory model ---------------------------------------------------------------------------

def test_forgetting_curve_is_fsrs45_power_curve():
    assert retrievability(0, 3.0) == 1.0
    assert retrievability(3.0, 3.0) == pytest.approx(0.9)
    assert retrievability(10, 2.0) == pytest.approx((1 + 19 / 81 * 5) ** -0.5)
    values = [retrievability(t, 5.0) for t in range(0, 100, 7)]
    assert values == sorted(values, reverse=True)
    with pytest.raises(ValueError):
        retrievability(-1, 1.0)


def test_first_exposure_uses_the_published_initial_stability_and_difficulty():
    knew = Memory.first(True, 0.0)
    assert (knew.stability, knew.difficulty) == (W[2], pytest.approx(W[4]))
    new = Memory.first(False, 0.0, ease=2.0, d_offset=1.0)
    assert new.stability == pytest.approx(2 * W[0])
    assert new.difficulty == pytest.approx(W[4] + 2 * W[5] + 1)


def test_recall_grows_stability_more_when_it_was_harder():
    soon, late = Memory(10.0, 5.0, 0.0), Memory(10.0, 5.0, 0.0)
    soon.review(True, 2.0)
    late.review(True, 30.0)
    assert 10.0 < soon.stability < late.stability  # the spacing effect
    assert late.last == 30.0


def test_a_lapse_never_raises_stability_and_makes_the_card_harder():
    for s in (0.3, 2.0, 40.0):
        memory = Memory(s, 5.0, 0.0)
        memory.review(False, s)
        assert 0 < memory.stability <= s and memory.difficulty > 5.0


def test_ease_scales_growth_and_a_same_day_repeat_moves_nothing():
    slow, fast = Memory(5.0, 5.0, 0.0, ease=0.5), Memory(5.0, 5.0, 0.0, ease=2.0)
    slow.review(True, 5.0)
    fast.review(True, 5.0)
    assert slow.stability - 5 == pytest.approx((fast.stability - 5) / 4)
    fast.seen(5.3)
    assert fast.last == 5.3 and fast.stability > 5


# -- the learner ----------------------------------------------------------------------------

def test_a_recalling_learner_is_right_on_the_first_try_and_faster():
    model = replace(LearnerModel(), prior=(("medium", 1.0),))
    sure, unsure = [], []
    for seed in range(200):
        answer = learner(model=model, seed=seed).answer(CHOICE, 0.0)
        assert answer.recalled and answer.correct and answer.attempts == 1
        sure.append(answer.latency_ms)
    model = replace(model, prior=(("medium", 0.0),))
    for seed in range(200):
        answer = learner(model=model, seed=seed).answer(CHOICE, 0.0)
        assert not answer.recalled
        unsure.append(answer.latency_ms)
    assert statistics.median(sure) < 20_000 < statistics.median(unsure)


def test_an_elimination_guesser_is_right_by_attempt_three_three_times_in_four():
    model = replace(LearnerModel(), prior=(("medium", 0.0),))
    answers = [learner(model=model, seed=s).answer(CHOICE, 0.0) for s in range(4000)]
    assert sum(a.correct for a in answers) / 4000 == pytest.approx(0.75, abs=0.03)
    assert sum(a.attempts == 1 and a.correct for a in answers) / 4000 == pytest.approx(
        0.25, abs=0.03)
    for a in answers:  # never the same wrong choice twice
        picks = [p[0] for p in a.picks]
        assert len(set(picks)) == len(picks)


def test_a_held_misconception_draws_the_guess_until_its_explanation_fixes_it():
    never = replace(LearnerModel(), prior=(("medium", 0.0),), fix_probability=0.0)
    sim = learner(held={"m-b"}, model=never)
    answer = sim.answer(CHOICE, 0.0)
    assert answer.picks[0] == ("b",) and "m-b" in answer.shown and "m-b" in sim.held
    always = replace(never, fix_probability=1.0)
    sim = learner(held={"m-b", "unrelated"}, model=always)
    sim.answer(CHOICE, 0.0)
    assert sim.held == {"unrelated"}


def test_a_misconception_lowers_recall_and_zeroes_the_lucky_guess():
    sim = learner(held={"m-a"})
    plain = learner()
    assert sim.recall_probability(CHOICE, 0.0) == pytest.approx(0.15 * 0.7)
    assert plain.first_try_probability(CHOICE, 0.0) == pytest.approx(0.15 + 0.85 / 4)
    assert sim.first_try_probability(CHOICE, 0.0) == pytest.approx(0.15 * 0.7)


def test_the_hint_rules_out_a_wrong_choice_and_first_exposure_starts_the_memory():
    model = replace(LearnerModel(), prior=(("medium", 0.0),))
    answer = learner(model=model, hint=1.0).answer(CHOICE, 0.0)
    assert answer.hint_used and answer.attempts <= 3
    sim = learner(model=model)
    sim.answer(CHOICE, 0.5)
    assert sim.memory["d/choice"].stability == pytest.approx(W[0])
    sim.answer(CHOICE, 0.6)  # same day: no update
    assert sim.memory["d/choice"].stability == pytest.approx(W[0])


def test_fill_in_answers_use_the_engines_response_shape(cards):
    fill = next(c for c in cards if len(c.slots) == 3)
    model = replace(LearnerModel(), prior=(("hard", 0.0), ("medium", 0.0), ("easy", 0.0)))
    sim = SimLearner(Profile(0, 1.0, 1.0, 0.0, frozenset()), model, {fill.id: 1.0}, 3)
    answer = sim.answer(fill, 0.0)
    response = fill.response(answer.picks[-1])
    assert set(response) == {slot.key for slot in fill.slots}
    assert answer.correct == (not fill.wrong(answer.picks[-1]))


def test_profiles_are_seeded():
    a = Profile.draw(7, 3, ["x", "y", "z"], LearnerModel())
    assert a == Profile.draw(7, 3, ["x", "y", "z"], LearnerModel())
    assert a != Profile.draw(8, 3, ["x", "y", "z"], LearnerModel())


# -- policies -------------------------------------------------------------------------------

def test_grade_maps():
    assert naive_quality(True, 3, True, 90_000) == 4 and naive_quality(False, 3, False, 1) == 1
    assert ours_quality(True, 3, False, 1000) == 0 and ours_quality(True, 1, False, 1000) == 5


def test_sm2_schedule_serves_due_then_new_within_the_limit_then_drills(cards):
    schedule = SimSchedule(cards[:4], 2, ours_quality)
    slow_right = Answer((("x",),), (90_000,), True, False, True, ())  # q 3: drill
    quick_right = Answer((("x",),), (1_000,), True, False, True, ())  # q 5
    first = schedule.next_card(0, 0)
    assert first == Pick(cards[0].id, "new")
    assert schedule.record(0, 0, first, cards[0], slow_right) == 3
    second = schedule.next_card(0, 1)
    assert second == Pick(cards[1].id, "new")
    schedule.record(0, 1, second, cards[1], quick_right)
    assert schedule.next_card(0, 2) == Pick(cards[0].id, "drill")  # limit of 2 new reached
    state = schedule.states[cards[0].id].sm2
    schedule.record(0, 2, Pick(cards[0].id, "drill"), cards[0], quick_right)
    assert schedule.states[cards[0].id].sm2 == state  # drills change no SM-2 state
    assert schedule.next_card(0, 3) is None
    assert schedule.next_card(1, 0).kind == "review"


def choice(card_id: str, *mistakes: str) -> SimCard:
    """A multiple-choice card whose wrong options stand for ``mistakes``; "z" is right."""
    options = tuple(f"o{i}" for i in range(len(mistakes)))
    return SimCard(card_id, "medium", (Slot(None, (*options, "z"), "z",
                                            dict(zip(options, mistakes, strict=True))),))


QUICK = Answer((("z",),), (1_000,), True, False, True, ())  # q 5


def second_try(*shown: str) -> Answer:
    """Right on attempt 2 after choosing ``shown``'s wrong options: q 1, a drill."""
    return Answer((("o0",), ("z",)), (30_000, 8_000), True, False, False, shown)


def test_policies_cover_both_schedulers_with_and_without_remediation():
    assert list(POLICIES) == ["sm2-ours", "sm2-naive", "fsrs", "sm2-ours+remediation",
                              "sm2-naive+remediation", "fsrs+remediation"]
    assert all(POLICIES[name].describe() for name in POLICIES)
    assert POLICIES["fsrs"].grade is ours_quality and POLICIES["fsrs"].active == "fsrs"
    assert [p.remediation for p in POLICIES.values()] == [False] * 3 + [True] * 3


def test_fsrs_states_move_with_review_fsrs_and_decide_the_due_day_when_active():
    deck = [choice("c0", "m0"), choice("c1", "m1")]
    fsrs = SimSchedule(deck, 2, ours_quality, "fsrs")
    sm2 = SimSchedule(deck, 2, ours_quality)
    for schedule in (fsrs, sm2):  # both schedulers move, whichever is active
        for card in deck:
            schedule.record(0, 0, schedule.next_card(0, 0), card, QUICK)
    first, interval = review_fsrs(None, 5, date(2026, 1, 5))
    assert interval == 2 and sm2.states["c0"].sm2.interval == 1
    for schedule in (fsrs, sm2):
        state = schedule.states["c0"]
        assert (state.fsrs, state.fsrs_due, state.due) == (first, 2, 1)
    assert fsrs.next_card(1, 0) is None and sm2.next_card(1, 0) == Pick("c0", "review")
    pick = fsrs.next_card(2, 0)
    assert pick == Pick("c0", "review")
    fsrs.record(2, 0, pick, deck[0], second_try("m0"))
    after, interval = review_fsrs(first, 1, date(2026, 1, 7))
    state = fsrs.states["c0"]
    assert (state.fsrs, state.fsrs_due, state.due) == (after, 2 + interval, 3)
    assert after.stability < fsrs.states["c1"].fsrs.stability
    # c0 (again due day 3) and c1 (due day 2, overdue): the earliest due first.
    assert fsrs.next_card(3, 0) == Pick("c1", "review")


def remediation_deck() -> list[SimCard]:
    return [choice("a0", "m1"), choice("a1", "m1"), choice("a2", "m1"), choice("b0", "m2"),
            choice("lure", "m1", "m3"), choice("new-other", "m4"), choice("new-m1", "m1")]


def test_a_shown_mistake_brings_met_cards_on_it_to_a_remedy_after_due_and_new_cards():
    deck = remediation_deck()
    by_id = {card.id: card for card in deck}
    schedule = SimSchedule(deck, 1, ours_quality, remediation=True)
    for day in (0, 1):  # a0..b0 met on day 0, reviewed on day 1: due on day 7
        for card in deck[:4]:
            schedule.record(day, 0, Pick(card.id, "new" if day == 0 else "review"), card, QUICK)
    assert schedule.next_card(2, 0) == Pick("lure", "new")  # nothing open: deck order
    schedule.record(2, 0, Pick("lure", "new"), by_id["lure"], second_try("m1"))
    assert schedule.open == {"m1"}
    picked = {cid for cid, s in schedule.states.items() if s.remedy is not None}
    assert picked == {"a0", "a1"} and REMEDIES_PER_MISTAKE == 2  # reviewed longest ago
    assert {s.remedy for s in schedule.states.values()} == {None, 2 + REMEDY_DELAY_DAYS}
    assert schedule.next_card(2, 1) == Pick("lure", "drill")  # the remedies are tomorrow
    schedule.record(2, 1, Pick("lure", "drill"), by_id["lure"], QUICK)
    assert schedule.next_card(2, 2) is None
    # Day 3: the due review, then the unseen card on the open mistake, then remedies, drills.
    assert schedule.next_card(3, 0) == Pick("lure", "review")
    schedule.record(3, 0, Pick("lure", "review"), by_id["lure"], second_try("m1"))
    assert schedule.states["a2"].remedy == 4  # a0 and a1 already hold one
    assert schedule.next_card(3, 1) == Pick("new-m1", "new")
    schedule.record(3, 1, Pick("new-m1", "new"), by_id["new-m1"], QUICK)
    assert schedule.open == set()  # right on the first try: faced the lure and passed it by
    before = schedule.states["a0"]
    before = (before.sm2, before.fsrs, before.due, before.fsrs_due, before.last_day,
              before.drill_pending)
    assert schedule.next_card(3, 2) == Pick("a0", "remedy")
    assert schedule.record(3, 2, Pick("a0", "remedy"), by_id["a0"], second_try("m1")) == 1
    after = schedule.states["a0"]
    assert (after.sm2, after.fsrs, after.due, after.fsrs_due, after.last_day,
            after.drill_pending) == before  # a remedy moves no schedule and no drill
    assert after.remedy is None
    assert schedule.next_card(3, 3) == Pick("a1", "remedy")
    schedule.record(3, 3, Pick("a1", "remedy"), by_id["a1"], QUICK)
    assert schedule.next_card(3, 4) == Pick("lure", "drill")


def test_remedies_are_bounded_per_mistake_and_per_day():
    deck = ([choice(f"x{i}", "m1") for i in range(4)] + [choice(f"y{i}", "m2") for i in range(4)]
            + [choice(f"z{i}", "m3") for i in range(4)])
    schedule = SimSchedule(deck, len(deck), ours_quality, remediation=True)
    for day in (0, 1):
        for card in deck:
            schedule.record(day, 0, Pick(card.id, "new" if day == 0 else "review"), card, QUICK)
    both = SimCard("both", "medium", deck[0].slots + deck[4].slots)
    schedule.tests["both"] = both.mistake_ids
    schedule.record(2, 0, Pick("both", "new"), both, second_try("m1", "m2"))
    pending = sorted(cid for cid, s in schedule.states.items() if s.remedy is not None)
    assert pending == ["x0", "x1", "y0", "y1"] and REMEDIES_PER_DAY == 4
    schedule.record(2, 1, Pick("z3", "drill"), deck[-1], second_try("m3"))
    assert all(schedule.states[f"z{i}"].remedy is None for i in range(4))  # the day is full
    for cid in pending[:2]:  # serving remedies uses up the next day's bound as well
        schedule.record(3, 0, Pick(cid, "remedy"), deck[0], QUICK)
    schedule.record(3, 1, Pick("z3", "drill"), deck[-1], second_try("m3"))
    assert all(schedule.states[f"z{i}"].remedy is None for i in range(4))


def test_without_remediation_misconceptions_are_tracked_but_change_nothing():
    deck = remediation_deck()
    schedule = SimSchedule(deck, 1, ours_quality)
    for card in deck[:4]:
        schedule.record(0, 0, Pick(card.id, "new"), card, QUICK)
    schedule.record(0, 0, Pick("lure", "new"), deck[4], second_try("m1"))
    assert schedule.open == {"m1"}
    assert all(s.remedy is None for s in schedule.states.values())
    assert schedule.next_card(1, 0).kind == "review"
    for card in deck[:5]:
        schedule.record(1, 0, Pick(card.id, "review"), card, QUICK)
    assert schedule.next_card(1, 1) == Pick("new-other", "new")


def test_percentile_treats_never_as_unknown():
    assert percentile([1, 2, 3, 4], 0.5) == 2 and percentile([], 0.5) is None
    assert percentile([1, math.inf, math.inf], 0.9) is None


# -- the direct driver against the real engine ----------------------------------------------

@pytest.mark.parametrize("name", ["sm2-ours", "sm2-ours+remediation", "fsrs",
                                  "fsrs+remediation"])
def test_the_direct_driver_makes_the_engines_decisions(tmp_path, library, cards, name):
    """The engine on the policy's scheduler and remediation, chosen as `tutor practice
    --scheduler --remediation` chooses them."""
    policy = POLICIES[name]
    config = SimConfig(learners=4, days=30, seed=5, new_per_day=6)
    engine = EnginePolicy(tmp_path, library, policy.active, policy.remediation)
    assert engine.name == name
    try:
        through_engine = simulate(engine, cards, config, keep_log=True)
    finally:
        engine.close()
    direct = simulate(policy, cards, config, keep_log=True)
    kinds = {"new", "review", "drill"} | ({"remedy"} if policy.remediation else set())
    assert len(direct.log) > 100 and {e[3] for e in direct.log} == kinds
    assert through_engine.log == direct.log
    assert through_engine.retention == direct.retention


# -- the benchmark --------------------------------------------------------------------------

def test_the_same_seed_gives_the_same_numbers(library):
    def numbers(seed):
        report = run_learning(SimConfig(learners=8, days=20, seed=seed), library)
        for policy in report["policies"].values():
            policy.pop("wall_s")
        report.pop("wall_s")
        return report

    assert numbers(1) == numbers(1)
    assert numbers(1)["policies"] != numbers(2)["policies"]
    report = numbers(1)
    assert [row["policy"] for row in report["table"]] == list(POLICIES)
    assert report["best_retention"] in POLICIES
    assert report["fewest_reviews_per_retained_card"] in POLICIES


def test_fsrs_with_remediation_is_seeded(cards):
    config = SimConfig(learners=30, days=30, seed=3)
    policy = POLICIES["fsrs+remediation"]
    one = simulate(policy, cards, config, keep_log=True)
    two = simulate(policy, cards, config, keep_log=True)
    assert one.log == two.log and one.retention == two.retention
    assert one.serves == two.serves and one.serves["remedy"] > 0
    assert {e[3] for e in one.log} == {"new", "review", "remedy", "drill"}
    other = simulate(policy, cards, replace(config, seed=4))
    assert other.log is None and other.serves != one.serves
