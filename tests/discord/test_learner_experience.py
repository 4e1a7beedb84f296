"""Through the real discord.py client: code that stopped before it trained is sent again
without using the card's attempt (from the modal, from a DM, across a restart), and a
mistake's explanation is shown once per served card.

The code checker is a stand-in with the sandbox's contract (CodeReport); the real sandbox
is in test_code_sandbox.py.
"""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from bot.engine import FREE_RETRIES, CodeReport
from tests.helpers.clock import store_now
from tests.helpers.discord import custom_ids, verdict_message
from tests.helpers.engines import engine_of

SCALED = "for x, y in dataloader:\n    loss = criterion(model(x), y) / accumulation_steps\n"
TYPO = "for x, y in dataloader:\n    lossy.backward()\n"
NAME_ERROR = "line 2: `NameError: name 'lossy' is not defined`"
NOT_JUDGED = "Not judged: your code stopped before it trained."


def judge(card, code: str, learner=None) -> CodeReport:
    if "lossy" in code:
        return CodeReport("error", False, (), (NAME_ERROR,), trained=False)
    return CodeReport("ok", True)


@pytest.fixture
def simcord_bot(code_tutor) -> TutorBot:
    return TutorBot(engine_of(code_tutor))


def labels(message) -> list[str]:
    return [c.get("label") for row in message.components for c in row["components"]]


def dm_labels(message) -> list[str]:  # a discord.Message: its rows are ActionRows
    return [c.label for row in message.components for c in row.children]


async def test_a_typo_from_the_modal_is_sent_again_and_the_pass_counts_as_a_first_try(
        world, store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    typo = verdict_message(await ann.submit_modal(await ann.click(card, label="Write code"),
                                                  {"code": TYPO}))
    embed = typo.embeds[0]
    assert embed.title == NOT_JUDGED
    assert embed.description.startswith(f"• {NAME_ERROR}")  # the learner's text, as code
    assert f"({FREE_RETRIES - 1} more such runs free on this card)" in embed.description
    assert "The answer" not in embed.description  # nothing revealed
    assert "Write code" in labels(typo) and "Next card" not in labels(typo)
    serve_id = custom_ids(card)[0].split(":")[2]
    assert store.reviews.get(serve_id) is None
    # The editor opens again from the verdict (the card is still at its first attempt).
    again = await ann.submit_modal(await ann.click(typo, label="Write code"), {"code": SCALED})
    assert verdict_message(again).embeds[0].title == "Correct!"
    log = store.reviews.get(serve_id)
    assert (log.correct, log.attempts, log.quality, log.chosen[0]["retries"]) == (True, 1, 5, 1)


async def test_free_runs_are_counted_across_a_restart_then_a_run_counts(simcord_env, store,
                                                                        code_tutor):
    simcord_env.create_guild(name="shared")
    dee = simcord_env.create_user("dee")
    await dee.slash("practice", topic="loop")
    for used in range(1, FREE_RETRIES + 1):
        await dee.send_dm(f"```py\n{TYPO}```")
        reply = dee.dm_channel.last_message.embeds[0]
        assert reply.title == NOT_JUDGED
        if used == 1:
            await simcord_env.restart_bot(TutorBot(engine_of(code_tutor)))
    assert "From now on a run counts even if it stops before training." in reply.description
    assert "Write code" in dm_labels(dee.dm_channel.last_message)
    await dee.send_dm(f"```py\n{TYPO}```")
    last = dee.dm_channel.last_message
    assert last.embeds[0].title == "Not this time."
    assert "Next card" in dm_labels(last)
    learner = store.learners.get_or_create(f"discord:{dee.id}", now=store_now())
    (log,) = store.reviews.on_day(learner.id, store_now().date())
    assert (log.correct, log.attempts, log.chosen[0]["retries"]) == (False, 1, FREE_RETRIES)
