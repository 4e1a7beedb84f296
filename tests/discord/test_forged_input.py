"""Input Discord does not check for us, through the real discord.py client: option ranges
and choices (discord.py does not enforce them when an interaction arrives), component ids
that a card does not have, and buttons no handler knows. Each gets a clear reply and
changes nothing."""

from __future__ import annotations

import pytest

from tests.helpers.discord import (
    choose,
    custom_ids,
    forged_slash,
    learner_of,
    served_id,
    still_showing,
    store_now,
)

pytestmark = pytest.mark.postgres

# Options of the "concept" topic's card (gradient-accumulation/purpose).
RIGHT, WRONG, OTHER_WRONG = "split-batch-to-save-memory", "combine-gpus", "state-memory"


def _button(custom_id: str, label: str = "Forged") -> dict:
    return {"type": 1, "components": [{"type": 2, "style": 2, "label": label,
                                       "custom_id": custom_id}]}


async def test_settings_out_of_range_are_refused_and_nothing_is_saved(world, store):
    _, channel, ann, _ = world
    before = learner_of(store, ann)
    for options, words in [({"reminder_hour": 25}, "reminder_hour must be"),
                           ({"new_per_day": -5}, "new_per_day must be"),
                           ({"reminders": True, "quiet_start": -3, "quiet_end": 99},
                            "quiet_start must be")]:
        result = await forged_slash(ann, channel, "settings", **options)
        assert result.ephemeral and words in result.response.content, options
    after = learner_of(store, ann)
    assert after == before and not after.reminders_enabled and after.next_reminder_at is None
    shown = await ann.slash(channel, "settings")
    assert "at 25:00" not in shown.response.content


async def test_a_leaderboard_period_not_offered_is_refused(world):
    _, channel, ann, _ = world
    result = await forged_slash(ann, channel, "leaderboard", period="decade")
    assert result.ephemeral and "one of: week, season" in result.response.content


async def test_a_pick_on_a_blank_the_card_does_not_have_leaves_it_answerable(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    sid = served_id(card)
    forged = {"type": 1, "components": [{
        "type": 3, "custom_id": f"srs:pick:{sid}:nosuchblank", "placeholder": "x",
        "options": [{"label": "zero_grad", "value": "zero_grad"}]}]}
    still_showing(card, [*card.components[:-1], forged])
    refused = await ann.select(card, ["zero_grad"], custom_id=f"srs:pick:{sid}:nosuchblank")
    assert refused.ephemeral and "not one of this card's blanks" in refused.response.content
    assert store.served.load(sid).draft == {}


async def test_write_code_on_a_card_that_is_not_a_code_card_says_so(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    sid = served_id(card)
    still_showing(card, [*card.components, _button(f"srs:code:{sid}:0", "Write code")])
    refused = await ann.click(card, label="Write code")
    assert refused.ephemeral and "not answered with code" in refused.response.content
    assert store.served.load(sid).attempts == 0
    assert (await choose(ann, card, RIGHT)).response.embeds[1].title == "Correct!"


async def test_a_button_no_handler_knows_gets_a_reply(world):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    still_showing(card, [_button("srs:retired-format:123", "Old")])
    result = await ann.click(card, label="Old")
    assert result.ephemeral and "out of date" in result.response.content


async def test_a_card_whose_answer_was_counted_without_feedback_can_go_on(world, store):
    # As if the edit showing the feedback failed after the attempt was stored: the message
    # keeps attempt-0 buttons. A click there gets the card as it stands, not a dead end.
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    shown = [dict(row) for row in card.components]
    await choose(ann, card, OTHER_WRONG)
    still_showing(card, shown)
    stale = await choose(ann, card, WRONG)
    assert "as it stands" in stale.response.content
    again = await choose(ann, stale.response, RIGHT)
    assert again.response.embeds[1].title == "Correct, on attempt 2."
    assert len(store.reviews.on_day(learner_of(store, ann).id, store_now().date())) == 1
    # Finished: Next, and the solution's steps on request.
    assert [cid.split(":")[1] for cid in custom_ids(again.response)] == ["next", "ref"]
