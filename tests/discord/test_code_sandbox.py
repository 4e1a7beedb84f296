"""The bot with its real sandbox: a code answer from the modal is judged by the checker."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from tests.helpers.discord import choose, custom_ids, pick_and_submit, verdict_message
from tests.helpers.engines import engine_of
from tests.helpers.hostile import HOSTILE, assert_quoted
from tests.helpers.train_loop import REFERENCE

NO_SCALING = """\
for i, (inputs, labels) in enumerate(dataloader):
    loss = criterion(model(inputs), labels)
    loss.backward()
    if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.fixture
def simcord_bot(bot_tutor, sandbox_judge) -> TutorBot:
    bot_tutor.code_judge = sandbox_judge
    return TutorBot(engine_of(bot_tutor))


async def train_loop_card(ann, channel):
    """The topic's fill-in and multiple-choice cards come first in deck order."""
    full_loop = (await ann.slash(channel, "practice", topic="training-loop")).response
    await pick_and_submit(ann, full_loop, {"divisor": "accumulation_steps",
                                           "method": "backward", "window": "accumulation_steps"})
    correct_loop = (await ann.slash(channel, "practice", topic="training-loop")).response
    await choose(ann, correct_loop, "step-and-clear-per-window")
    card = (await ann.slash(channel, "practice", topic="training-loop")).response
    footer = card.embeds[0].footer.text  # no "3 attempts left": one judged run decides it
    assert footer == "Syntax errors are free (up to 3); one run is graded."
    return card


async def test_a_code_answer_is_run_in_the_sandbox_and_explained(world, store):
    _, channel, ann, _ = world
    card = await train_loop_card(ann, channel)
    shown = await ann.click(card, label="Write code")
    result = await ann.submit_modal(shown, {"code": NO_SCALING})
    verdict = verdict_message(result).embeds[0]
    assert verdict.title == "Not this time."
    assert verdict.description.startswith("• **Loss not scaled**: the loss was not divided "
                                          "by accumulation_steps (4), so every update used "
                                          "gradients 4x too large. ")
    serve_id = custom_ids(card)[0].split(":")[2]
    assert store.reviews.get(serve_id).mistake_ids == ["no_loss_scaling"]


async def test_a_hostile_exception_reaches_the_embed_only_as_code(world):
    _, channel, ann, _ = world
    shown = await ann.click(await train_loop_card(ann, channel), label="Write code")
    result = await ann.submit_modal(shown, {"code": f"raise ValueError({HOSTILE!r})\n"})
    text = verdict_message(result).embeds[0].description
    assert text.startswith("• line 1: `ValueError: ˋ[click](https://evil.example)ˋ ✅")
    assert_quoted(text)


async def test_a_typo_run_by_the_real_sandbox_is_sent_again_then_judged(world, store):
    _, channel, ann, _ = world
    card = await train_loop_card(ann, channel)
    typo = REFERENCE.replace("loss.backward()", "loss.backwrd()")
    shown = await ann.click(card, label="Write code")
    retry = verdict_message(await ann.submit_modal(shown, {"code": typo}))
    embed = retry.embeds[0]
    assert embed.title == "Not judged: your code stopped before it trained."
    assert "AttributeError" in embed.description and "backwrd" in embed.description
    serve_id = custom_ids(card)[0].split(":")[2]
    assert store.reviews.get(serve_id) is None
    shown = await ann.click(retry, label="Write code")
    verdict = verdict_message(await ann.submit_modal(shown, {"code": REFERENCE}))
    assert verdict.embeds[0].title == "Correct!"
    log = store.reviews.get(serve_id)
    assert (log.correct, log.attempts, log.chosen[0]["retries"]) == (True, 1, 1)
