"""A code answer our sandbox could not judge, through discord.py: the learner reads plainly
that it was not judged and what to do, no verdict and no reference are shown, nothing is
recorded, and the same card takes the code again once the sandbox is back (a first try).
Every kind of fault (tests/helpers/faults.py), from the modal and from a DM."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from bot.engine.tutor import Tutor
from tests.helpers.clock import store_now
from tests.helpers.discord import custom_ids, verdict_message
from tests.helpers.engines import engine_of
from tests.helpers.faults import FAULTS, FaultyJudge
from tests.helpers.train_loop import REFERENCE


@pytest.fixture(params=FAULTS)
def judge(request):
    judge = FaultyJudge(request.param)
    yield judge
    judge.close()


@pytest.fixture
def simcord_bot(store, mini_library, clock, judge) -> TutorBot:
    return TutorBot(engine_of(Tutor(store, mini_library, clock=clock, code_judge=judge)))


def told_not_judged(message) -> None:
    assert message.content.startswith("Your code was not judged: ")
    assert "That is our fault, not your code's: no attempt was used" in message.content
    assert not message.embeds  # no verdict, no reference


async def test_the_modal_says_so_and_the_card_stays_open(world, store, judge):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    serve_id = custom_ids(card)[0].split(":")[2]
    shown = await ann.click(card, label="Write code")
    said = verdict_message(await ann.submit_modal(shown, {"code": REFERENCE}))
    told_not_judged(said)
    assert said.ephemeral
    assert store.reviews.get(serve_id) is None

    judge.client.heal()
    shown = await ann.click(card, label="Write code")  # the card's own button still works
    verdict = verdict_message(await ann.submit_modal(shown, {"code": REFERENCE}))
    assert verdict.embeds[0].title == "Correct!"
    log = store.reviews.get(serve_id)
    assert (log.correct, log.attempts) == (True, 1)


async def test_a_dm_reply_says_so_and_the_card_stays_open(simcord_env, store, judge):
    simcord_env.create_guild(name="shared")
    dee = simcord_env.create_user("dee")
    await dee.slash("practice", topic="loop")
    await dee.send_dm(f"```python\n{REFERENCE}```")
    told_not_judged(dee.dm_channel.last_message)
    learner = store.learners.get_or_create(f"discord:{dee.id}", now=store_now())
    assert store.reviews.on_day(learner.id, store_now().date()) == []

    judge.client.heal()
    await dee.send_dm(f"```python\n{REFERENCE}```")
    assert dee.dm_channel.last_message.embeds[0].title == "Correct!"
