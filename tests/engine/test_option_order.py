"""Options and chips are shown in an order shuffled once per serve and kept with the served
card: every rendering of it shows the same letters, answers and logs carry only ids."""

from __future__ import annotations

import json

from bot.engine.feedback import lettered, shown
from bot.engine.served import Served
from content.schema import Option
from tests.helpers.engines import engine_of
from tests.helpers.records import RIGHT

WHY, CLEAR = "mini/why", "mini/clear"
IDS = {WHY: ["average", "memory", "speed"], CLEAR: ["backward", "step", "zero_grad"]}


def serves(tutor, card_id: str, n: int, learner: str = "local:ann") -> list[Served]:
    """`n` serves of one card (practice serves an unanswered card again, each time anew)."""
    learner = tutor.learner(learner)
    return [tutor.next_card(learner, mode="practice", only=card_id) for _ in range(n)]


def shown_ids(tutor, served: Served) -> list[str]:
    return [item.id for item in shown(tutor.card(served), served)]


def test_each_serve_shows_every_option_once_and_serves_differ(tutor):
    for card_id in (WHY, CLEAR):  # options of a choice card, chips of a fill-in card
        orders = [tuple(shown_ids(tutor, s)) for s in serves(tutor, card_id, 40)]
        assert all(sorted(order) == IDS[card_id] for order in orders)
        assert len(set(orders)) > 1  # 40 serves of one order: odds of 1 in 6**39


def test_the_order_survives_the_json_the_database_keeps(tutor):
    for served in serves(tutor, WHY, 10):
        again = Served.from_json(json.loads(json.dumps(served.to_json())))
        card = tutor.card(served)
        assert lettered(card, again) == lettered(card, served)
        assert again.order == served.order


def test_the_order_is_kept_through_attempts_and_the_hint(tutor):
    (served,) = serves(tutor, WHY, 1)
    before = shown_ids(tutor, served)
    hinted, _ = tutor.hint(served)
    after = tutor.answer(hinted, "speed").served
    assert shown_ids(tutor, hinted) == shown_ids(tutor, after) == before


def test_answers_are_judged_by_id_wherever_the_option_is_shown(tutor):
    positions = set()
    for n in range(12):
        (served,) = serves(tutor, WHY, 1, learner=f"local:learner{n}")
        positions.add(shown_ids(tutor, served).index("average"))
        verdict = tutor.answer(served, RIGHT[WHY])
        assert verdict.correct and verdict.served.chosen == ("average",)
    assert len(positions) > 1  # the right option was not always under the same letter


def test_a_card_stored_before_orders_were_kept_shows_deck_order_and_answers(tutor, store):
    play = engine_of(tutor).cards
    learner = tutor.learner("local:ann")
    served = play.serve(learner, mode="practice", card_id=WHY).served
    old = {k: v for k, v in served.to_json().items() if k != "order"}
    store.served.save("old-row", learner.id, {**old, "serve_id": "old-row"},
                      served.served_at)
    playing = play.current("old-row", learner)
    assert shown_ids(tutor, playing.served) == ["average", "speed", "memory"]
    verdict = play.answer("old-row", 0, learner, "speed")
    assert not verdict.correct and verdict.findings[0].choice == "To train faster"
    assert play.answer("old-row", 1, learner, RIGHT[WHY]).correct


def test_a_stored_card_shows_the_same_order_when_loaded_again(tutor):
    play = engine_of(tutor).cards
    learner = tutor.learner("local:ann")
    for _ in range(5):
        served = play.serve(learner, mode="practice", card_id=WHY).served
        assert play.current(served.serve_id, learner).served.order == served.order


def test_a_deck_edit_keeps_the_shown_options_and_adds_new_ones_last(tutor):
    (served,) = serves(tutor, WHY, 1)
    card = tutor.card(served)
    kept = [o for o in card.options if o.id != "memory"]
    edited = card.model_copy(update={"options": [
        Option(id="new", text="A new option", mistake="no_scaling", says="New."), *kept]})
    before = [i for i in shown_ids(tutor, served) if i != "memory"]
    assert [o.id for o in shown(edited, served)] == [*before, "new"]
    assert [letter for letter, _ in lettered(edited, served)] == ["A", "B", "C"]
