"""Playing cards through the real discord.py client: what the learner sees and what is
stored, for every button and select, after restarts, double clicks and deck changes."""

from __future__ import annotations

import copy

import pytest
import sqlalchemy as sa

from bot.discord_ui.client import TutorBot
from bot.engine.tutor import Tutor
from scheduler.storage.db import make_engine
from scheduler.storage.served import served_t
from scheduler.storage.store import Store
from tests.helpers.decks import deck_yaml
from tests.helpers.discord import (
    card_id_of,
    choose,
    custom_ids,
    learner_of,
    letter_for,
    pick_and_submit,
    served_id,
    still_showing,
    store_now,
)
from tests.helpers.engines import engine_of

pytestmark = pytest.mark.postgres

ZERO_GRAD = "gradient-accumulation/zero-grad"
# The options of the "concept" topic's card (gradient-accumulation/purpose) these tests pick.
RIGHT, WRONG, OTHER_WRONG = "split-batch-to-save-memory", "combine-gpus", "state-memory"


async def test_learn_serves_a_private_fill_in_card(world, store):
    guild, channel, ann, _ = world
    result = await ann.slash(channel, "learn")
    assert result.ephemeral
    (embed,) = result.response.embeds
    assert embed.title == "New card · easy · optimizer basics"  # a topic in words
    assert ("```py\nif (i + 1) % accumulation_steps == 0:\n    optimizer.step()\n"
            "    optimizer.[1]()\n```") in embed.description
    assert embed.footer.text == "3 attempts left"  # no id: learners never see ours
    assert card_id_of(store, result.response) == ZERO_GRAD
    select = result.response.components[0]["components"][0]
    assert select["placeholder"] == "Blank [1]"
    assert sorted(o["label"] for o in select["options"]) == [
        "backward", "clip_grad_norm_", "eval", "step", "zero_grad"]
    assert {"Submit", "Hint"} <= {c.get("label") for row in result.response.components
                                  for c in row["components"]}
    learner = learner_of(store, ann)
    assert store.served.load(served_id(result.response)).learner_id == learner.id
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT guild_id, learner_id FROM guild_member").all() == [
            (guild.id, learner.id)]


async def test_a_wrong_chip_explains_its_mistake_then_the_right_one_schedules(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    wrong = await pick_and_submit(ann, card, {"method": "step"})
    feedback = wrong.response.embeds[1]
    assert feedback.title == "Not quite. 2 attempts left."
    assert "**[1] `step`**: A second optimizer.step() applies the same window's" in (
        feedback.description)
    # Before the last try: what the pick does, not its mistake's paragraph (which names
    # the answer): that comes with the final verdict.
    assert "Stepping where gradients should be cleared" not in feedback.description
    assert "zero_grad" not in feedback.description
    assert wrong.response.embeds[0].footer.text.startswith("2 attempts left")
    learner = learner_of(store, ann)
    assert store.reviews.on_day(learner.id, store_now().date()) == []
    right = await pick_and_submit(ann, wrong.response, {"method": "zero_grad"})
    done = right.response.embeds[1]
    assert done.title == "Correct, on attempt 2."
    assert "> **Stepping where gradients should be cleared.** " in done.description
    assert "Next review of this card: **tomorrow**." in done.description
    assert custom_ids(right.response) == ["srs:next:learn"]
    (log,) = store.reviews.on_day(learner.id, store_now().date())
    assert (log.card_id, log.quality, log.attempts) == (ZERO_GRAD, 1, 2)
    assert log.chosen == [{"method": "step"}, {"method": "zero_grad"}]
    assert log.mistake_ids == ["step_instead_of_zero_grad"]


async def test_submit_without_picking_every_blank_is_refused(world):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loss-scaling")).response
    assert len([c for c in custom_ids(card) if c.startswith("srs:pick:")]) == 2
    await ann.select(card, ["accumulation_steps"],
                     custom_id=next(c for c in custom_ids(card) if c.endswith(":divisor")))
    result = await ann.click(card, label="Submit")
    assert result.ephemeral and result.response.content == "Pick an option for blank [2] first."


async def test_multiple_choice_buttons_explain_the_chosen_option(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    assert [c["label"] for c in card.components[0]["components"]] == ["A", "B", "C", "D"]
    assert "**A.**" in card.embeds[0].description
    wrong = await choose(ann, card, WRONG)
    text = wrong.response.embeds[1].description
    deck_card = store_deck().card("gradient-accumulation/purpose")
    option = next(o for o in deck_card.options if o.id == WRONG)
    assert option.says in text
    explanation = store_deck().mistake("confuses_with_data_parallel").explanation
    assert explanation not in text  # kept for the final verdict
    right = await choose(ann, wrong.response, RIGHT)
    assert right.response.embeds[1].title == "Correct, on attempt 2."
    assert explanation in right.response.embeds[1].description
    # The step-by-step solution is a button away (a phone's screen is the limit).
    assert "1. **" not in right.response.embeds[1].description
    steps = (await ann.click(right.response, label="Why this is right")).response
    assert steps.ephemeral
    assert steps.embeds[0].description.startswith(
        f"1. **{deck_card.solution[0].title}**: ")


async def test_the_bot_keeps_no_copy_of_a_card_s_controls(world, simcord_bot):
    """A card's clicks are routed by custom_id, so discord.py's view store need not keep
    its controls: kept, every card message's view would stay in memory for the life of the
    process (a leak of one view per card served)."""
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    wrong = await choose(ann, card, WRONG)
    await choose(ann, wrong.response, RIGHT)
    fill_in = (await ann.slash(channel, "learn")).response
    await ann.click(fill_in, label="Hint")
    assert simcord_bot.persistent_views == []


def store_deck():
    from content.loader import DeckLibrary
    return DeckLibrary.load().deck("gradient-accumulation")


async def test_hint_shows_once_and_caps_the_grade(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    hinted = await ann.click(card, label="Hint")
    assert hinted.response.embeds[0].fields[0].name == "Hint"
    assert "Hint" not in [c.get("label") for row in hinted.response.components
                          for c in row["components"]]
    await pick_and_submit(ann, hinted.response, {"method": "zero_grad"})
    (log,) = store.reviews.on_day(learner_of(store, ann).id, store_now().date())
    assert log.hint_used and log.quality == 2


async def test_next_serves_the_following_card_in_place(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    done = await pick_and_submit(ann, card, {"method": "zero_grad"})
    following = await ann.click(done.response, label="Next card")
    assert card_id_of(store, following.response) == "gradient-accumulation/backward"


async def test_a_double_click_records_one_answer(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    shown = copy.deepcopy(card.components)
    await choose(ann, card, RIGHT)
    still_showing(card, shown)
    again = await choose(ann, card, RIGHT)
    assert again.ephemeral and "already answered" in again.response.content
    assert len(store.reviews.on_day(learner_of(store, ann).id, store_now().date())) == 1


async def test_a_click_on_an_outdated_attempt_is_not_counted_twice(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    shown = copy.deepcopy(card.components)
    await choose(ann, card, OTHER_WRONG)
    still_showing(card, shown)
    stale = await choose(ann, card, WRONG)  # rendered for attempt 0, now at attempt 1
    assert stale.ephemeral
    assert stale.response.content.startswith("That click was already counted.")
    # ...with the card as it stands, so a learner whose message kept old buttons goes on.
    assert all(cid.split(":")[3] == "1" for cid in custom_ids(stale.response)
               if cid.startswith("srs:opt:"))
    row = store.served.load(served_id(card))
    assert row.attempts == 1


async def test_cards_still_answer_after_a_restart(world, simcord_env, store, bot_tutor):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    await simcord_env.restart_bot(TutorBot(engine_of(bot_tutor)))
    result = await choose(ann, card, RIGHT)
    assert result.response.embeds[1].title == "Correct!"
    assert len(store.reviews.on_day(learner_of(store, ann).id, store_now().date())) == 1


async def test_a_card_changed_since_serving_is_stale(world, store, simcord_env, bot_tutor):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="concept")).response
    sid = served_id(card)
    served = store.served.load(sid).served
    with store.engine.begin() as conn:  # as if served before the card's content changed
        conn.execute(served_t.update().where(served_t.c.serve_id == sid)
                     .values(served={**served, "card_rev": served["card_rev"] - 1}))
    # by a process that knew that deck:
    await simcord_env.restart_bot(TutorBot(engine_of(bot_tutor)))
    result = await choose(ann, card, RIGHT)
    assert "changed since it was served" in result.response.embeds[0].description
    assert custom_ids(result.response) == ["srs:next:auto"]
    assert store.reviews.on_day(learner_of(store, ann).id, store_now().date()) == []


async def test_a_card_that_no_longer_exists_says_so(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    with store.engine.begin() as conn:
        conn.execute(sa.delete(served_t))
    result = await ann.click(card, label="Hint")
    assert result.ephemeral and "no longer available" in result.response.content


async def test_public_play_needs_the_server_and_only_the_learner_may_answer(world, store):
    guild, channel, ann, bob = world
    refused = await ann.slash(channel, "review", public=True)
    assert refused.ephemeral and "keeps cards private" in refused.response.content
    store.servers.update_settings(guild.id, public_play=True)
    card = (await ann.slash(channel, "practice", topic="concept", public=True)).response
    assert not card.ephemeral
    intruder = await bob.click(card, label=letter_for(card, RIGHT))
    assert intruder.ephemeral and "served to someone else" in intruder.response.content
    assert store.served.load(served_id(card)).attempts == 0
    mine = await choose(ann, card, RIGHT)
    assert mine.response.embeds[1].title == "Correct!"


async def test_review_with_nothing_due_says_when_the_next_one_is(world):
    _, channel, ann, _ = world
    nothing = await ann.slash(channel, "review")
    assert nothing.ephemeral and "Nothing is due right now" in nothing.response.content
    card = (await ann.slash(channel, "learn")).response
    await pick_and_submit(ann, card, {"method": "zero_grad"})
    later = await ann.slash(channel, "review")
    assert "Next review: **tomorrow**." in later.response.content


async def test_commands_work_in_a_dm_with_the_bot(simcord_env, store):
    simcord_env.create_guild(name="shared")  # a DM needs a server in common with the bot
    user = simcord_env.create_user("dee")
    result = await user.slash("learn")
    assert result.response.embeds[0].title.startswith("New card")
    sid = served_id(result.response)
    done = await user.select(result.response, ["zero_grad"],
                             custom_id=custom_ids(result.response)[0])
    assert done.acknowledged
    final = await user.click(result.response, label="Submit")
    assert final.response.embeds[1].title == "Correct!"
    assert store.served.load(sid).finished and store.reviews.get(sid).guild_id is None


async def test_a_hint_keeps_the_chips_picked_before_it(world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "learn")).response
    pick = next(c for c in custom_ids(card) if c.startswith("srs:pick:"))
    await ann.select(card, ["zero_grad"], custom_id=pick)
    hinted = await ann.click(card, label="Hint")
    assert hinted.response.embeds[0].fields[0].name == "Hint"
    done = await ann.click(hinted.response, label="Submit")
    assert done.response.embeds[1].title == "Correct!"


async def test_a_card_another_process_changed_is_stale_here_before_this_one_looks(
        world, store, bot_tutor, db_url, deck_library, clock):
    """Issue 36 (5): this bot's library is up to 30 s behind a version another process
    stored; a click on the option that version removed is not judged on the old one."""
    guild, channel, ann, _ = world
    engine_of(bot_tutor).decks.upload(guild.id, "deck.yaml", deck_yaml(), "ann")
    card = (await ann.slash(channel, "practice", topic="devices")).response
    while card_id_of(store, card) != "upload-basics/move":
        await pick_and_submit(ann, card, {"attr": "shape"})
        card = (await ann.slash(channel, "practice", topic="devices")).response
    other = Tutor(Store(make_engine(db_url)), deck_library, clock=clock)
    engine_of(other).decks.upload(guild.id, "deck.yaml", deck_yaml(without_same), "bob")
    other.store.close()
    other.store.engine.dispose()
    result = await choose(ann, card, "same")
    assert "changed since it was served" in result.response.embeds[0].description
    assert custom_ids(result.response) == ["srs:next:auto"]
    assert store.reviews.get(served_id(card)) is None


def without_same(data) -> None:  # a change of meaning: "same" was on the learner's card
    move = data["cards"][0]
    move.update(rev=2, content_rev=2)
    move["options"] = [o for o in move["options"] if o["id"] != "same"]
