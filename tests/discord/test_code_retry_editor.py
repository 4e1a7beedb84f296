"""Issue 41, point 2, through the real discord.py client: after a run that was not judged,
the code editor opens on the learner's own code (not the card's starter again), and its
input's label says the first line of the error; a card never run opens on its starter.

The code checker is a stand-in with the sandbox's contract (CodeReport)."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from bot.engine import CodeReport
from tests.helpers.discord import verdict_message
from tests.helpers.engines import engine_of

TYPO = "for x, y in dataloader:\n    loss = criterion(model(x), y)\n    lossy.backward()\n"
NAME_ERROR = "line 3: `NameError: name 'lossy' is not defined`"
# Discord allows 45 characters in a text input's label: the error, without its backticks.
LABEL = "line 3: NameError: name 'lossy' is not defin…"


def judge(card, code: str, learner=None) -> CodeReport:
    if "lossy" in code:
        return CodeReport("error", False, (), (NAME_ERROR,), trained=False)
    return CodeReport("ok", True)


@pytest.fixture
def simcord_bot(code_tutor) -> TutorBot:
    return TutorBot(engine_of(code_tutor))


def editor(shown) -> dict:
    """The code modal's one text input, as Discord received it."""
    (row,) = shown.modal["components"]
    (field,) = row["components"]
    return field


async def test_the_editor_reopens_on_the_learners_code_with_the_error_as_its_label(
        world, mini_library, code_tutor, simcord_env):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    first = editor(await ann.click(card, label="Write code"))
    starter = mini_library.card("mini/loop").starter
    assert (first["label"], first["value"]) == ("Python code", starter)

    typo = verdict_message(await ann.submit_modal(await ann.click(card, label="Write code"),
                                                  {"code": TYPO}))
    assert typo.embeds[0].title == "Not judged: your code stopped before it trained."
    assert typo.embeds[0].footer.text == "Syntax errors are free (up to 3); one run is graded."
    # From the verdict's button, from the card's own, and after a restart: the same.
    again = editor(await ann.click(typo, label="Write code"))
    assert (again["label"], again["value"]) == (LABEL, TYPO)
    assert len(again["label"]) == 45
    await simcord_env.restart_bot(TutorBot(engine_of(code_tutor)))
    shown = await ann.click(card, label="Write code")
    assert (editor(shown)["label"], editor(shown)["value"]) == (LABEL, TYPO)

    fixed = TYPO.replace("lossy", "loss")
    verdict = verdict_message(await ann.submit_modal(shown, {"code": fixed}))
    assert verdict.embeds[0].title == "Correct!"


async def test_a_dm_reply_that_was_not_judged_is_the_editors_text_too(simcord_env):
    simcord_env.create_guild(name="shared")
    dee = simcord_env.create_user("dee")
    await dee.slash("practice", topic="loop")
    await dee.send_dm(f"```py\n{TYPO}```")
    reply = dee.dm_channel.last_message
    assert reply.embeds[0].title == "Not judged: your code stopped before it trained."
    field = editor(await dee.click(reply, label="Write code"))
    assert (field["label"], field["value"]) == (LABEL, TYPO)
