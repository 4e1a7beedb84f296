"""Code cards in Discord: the modal, a fenced code block in a DM, and the verdict.

The checker here is a stand-in with the sandbox's contract (CodeReport); the real
sandbox and checker plug into the same `code_judge`.
"""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from bot.engine import CodeReport
from tests.helpers.clock import store_now
from tests.helpers.discord import custom_ids, verdict_message
from tests.helpers.engines import engine_of

SCALED = "for x, y in dataloader:\n    loss = criterion(model(x), y) / accumulation_steps\n"


def judge(card, code: str, learner=None) -> CodeReport:
    if "/ accumulation_steps" in code:
        return CodeReport("ok", True)
    return CodeReport("ok", False, ("no_scaling",), ("gradients were 4x too large",))


@pytest.fixture
def simcord_bot(code_tutor) -> TutorBot:
    return TutorBot(engine_of(code_tutor))


async def test_the_modal_takes_code_and_the_verdict_explains_the_mistake(world, store,
                                                                        simcord_env):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    assert "Write code" in [c.get("label") for row in card.components for c in row["components"]]
    shown = await ann.click(card, label="Write code")
    assert shown.modal["title"] == "Your training loop"
    result = await ann.submit_modal(shown, {"code": "for x in dataloader:\n    pass\n"})
    # Deferred first (the sandbox may take seconds); the verdict fills the "thinking" reply.
    followup = verdict_message(result)
    callbacks = [r.json for r in simcord_env.http_requests if r.path.endswith("/callback")]
    assert callbacks[-1]["type"] == 5 and callbacks[-1]["data"]["flags"] & 64
    assert followup.ephemeral
    text = followup.embeds[0].description
    assert followup.embeds[0].title == "Not this time."
    # A bullet per failed check: the mistake, what was measured, why (its first sentence).
    assert text.startswith("• **No scaling**: gradients were 4x too large. Unscaled losses "
                           "add up to gradients N times too large.\n\n")
    serve_id = custom_ids(card)[0].split(":")[2]
    log = store.reviews.get(serve_id)
    assert (log.correct, log.mistake_ids) == (False, ["no_scaling"])


async def test_a_modal_opened_before_a_restart_is_still_judged(world, simcord_env, store,
                                                               code_tutor):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    shown = await ann.click(card, label="Write code")
    await simcord_env.restart_bot(TutorBot(engine_of(code_tutor)))
    result = await ann.submit_modal(shown, {"code": SCALED})
    assert verdict_message(result).embeds[0].title == "Correct!"


async def test_a_fenced_code_block_in_a_dm_answers_the_open_code_card(simcord_env, store):
    simcord_env.create_guild(name="shared")
    dee = simcord_env.create_user("dee")
    nothing = await dee.send_dm("```py\nprint('hi')\n```")
    assert "no code card open" in dee.dm_channel.last_message.content
    assert nothing is not None
    await dee.slash("practice", topic="loop")
    await dee.send_dm(f"here is my loop:\n```python\n{SCALED}```")
    reply = dee.dm_channel.last_message
    assert reply.embeds[0].title == "Correct!"
    learner = store.learners.get_or_create(f"discord:{dee.id}", now=store_now())
    (log,) = store.reviews.on_day(learner.id, store_now().date())
    assert log.card_id == "mini/loop" and log.correct
