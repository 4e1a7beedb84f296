"""Which card next (scheduler/next_card.py): the one order the engine and the simulator use.
tests/bench/test_learning_sim.py runs both on it and holds them to the same decisions."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler.next_card import MetCard, Pick, pick_next

TODAY = 10


def met(due_day=20, risk=250.0, relearn=False, last_day=5, last_at=(5, 0),
        drill_pending=False, remedy=None) -> MetCard:
    return MetCard(due_day, risk, relearn, last_day, last_at, drill_pending, remedy)


def test_due_reviews_come_first_changed_cards_then_most_overdue_then_most_at_risk():
    cards = {"a": met(due_day=9, risk=250), "b": met(due_day=8, risk=260),
             "c": met(due_day=8, risk=130), "d": met(due_day=30, relearn=True)}
    assert pick_next(cards, ["new"], TODAY, new_left=5) == Pick("d", "review")
    del cards["d"]
    assert pick_next(cards, ["new"], TODAY, new_left=5) == Pick("c", "review")
    assert pick_next(cards, ["new"], TODAY, new_left=5, mode="learn") == Pick("new", "new")


def test_new_cards_in_deck_order_within_the_limit_misconceptions_first_with_remediation():
    unseen = ["x", "y", "z"]
    tests = {"x": frozenset(), "y": frozenset({"m2"}), "z": frozenset({"m1"})}
    assert pick_next({}, unseen, TODAY, new_left=1) == Pick("x", "new")
    assert pick_next({}, unseen, TODAY, new_left=0) is None
    on = dict(new_left=1, tests=tests, open_mistakes={"m1"})
    assert pick_next({}, unseen, TODAY, **on) == Pick("x", "new")  # remediation off
    assert pick_next({}, unseen, TODAY, remediation=True, **on) == Pick("z", "new")


def test_remedies_with_remediation_then_todays_drills_oldest_first():
    cards = {"r2": met(remedy=9), "r1": met(remedy=9), "later": met(remedy=11),
             "d1": met(last_day=TODAY, last_at=(TODAY, 50), drill_pending=True),
             "d0": met(last_day=TODAY, last_at=(TODAY, 10), drill_pending=True),
             "old": met(last_day=9, last_at=(9, 0), drill_pending=True)}
    assert pick_next(cards, [], TODAY, new_left=5, remediation=True) == Pick("r1", "remedy")
    assert pick_next(cards, [], TODAY, new_left=5) == Pick("d0", "drill")
    assert pick_next(cards, [], TODAY, new_left=5, mode="learn") is None


def test_practice_serves_anything_new_within_the_limit_else_cram_then_the_stalest():
    at = datetime(2026, 3, 1, tzinfo=UTC)
    cards = {"a": met(last_at=at.replace(day=3)), "b": met(last_at=at)}
    assert pick_next(cards, ["u"], TODAY, new_left=1, mode="practice") == Pick("u", "new")
    assert pick_next(cards, ["u"], TODAY, new_left=0, mode="practice") == Pick("u", "cram")
    assert pick_next(cards, [], TODAY, new_left=0, mode="practice") == Pick("b", "cram")
    assert pick_next({}, [], TODAY, new_left=0, mode="practice") is None
    assert pick_next(cards, [], TODAY, new_left=0, mode="review") is None


def test_the_days_new_card_allowance_is_asked_only_when_a_new_card_could_come_next():
    asked = []

    def allowance() -> int:
        asked.append(1)
        return 1

    due = {"d": met(due_day=TODAY)}
    assert pick_next(due, ["new"], TODAY, new_left=allowance) == Pick("d", "review")
    assert asked == []  # a review comes first: the allowance (a query) is never needed
    assert pick_next({}, ["new"], TODAY, new_left=allowance) == Pick("new", "new")
    assert asked == [1]
