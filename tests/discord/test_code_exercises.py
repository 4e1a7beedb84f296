"""A community's code exercises in Discord (issue 27): an admin uploads the example deck of
behaviour cards (tried in the real sandbox first), a learner writes the code in the modal,
and the verdict names the mistake, or shows the smallest case where the code differs."""

from __future__ import annotations

import threading

import pytest

from bot.discord_ui.client import TutorBot
from bot.engine import FREE_RETRIES
from tests.helpers.discord import custom_ids, final, text_of, untouched, verdict_message
from tests.helpers.engines import engine_of
from tests.helpers.exercises import EXAMPLE, MASK, MASK_TYPO, MISTAKEN, RIGHT, UNLABELLED


@pytest.fixture
def simcord_bot(bot_tutor, sandbox_judge) -> TutorBot:
    bot_tutor.code_judge = sandbox_judge
    return TutorBot(engine_of(bot_tutor))


async def upload_example(admin, channel) -> str:
    message = final(await admin.slash(channel, "deck upload",
                                      file=(EXAMPLE.name, EXAMPLE.read_bytes())))
    return message.content


async def write(learner, channel, topic: str, code: str):
    card = (await learner.slash(channel, "practice", topic=topic)).response
    shown = await learner.click(card, label="Write code")
    return card, verdict_message(await learner.submit_modal(shown, {"code": code}))


async def test_the_example_deck_uploads_and_a_labelled_mistake_is_named(world, admin, store):
    _, channel, ann, _ = world
    stored = await upload_example(admin, channel)
    assert "pytorch-exercises" in stored and "was refused" not in stored, stored
    card, verdict = await write(ann, channel, "attention", MISTAKEN["mask_hides_past"][1])
    embed = verdict.embeds[0]
    assert embed.title == "Not this time."
    assert embed.description.startswith("• **The mask hides the past instead of the "
                                        "future**: ")
    serve_id = custom_ids(card)[0].split(":")[2]
    assert store.reviews.get(serve_id).mistake_ids == ["mask_hides_past"]


async def test_an_unlabelled_answer_is_shown_its_smallest_differing_case(world, admin):
    _, channel, ann, _ = world
    await upload_example(admin, channel)
    _, verdict = await write(ann, channel, "losses",
                             UNLABELLED["pytorch-exercises/padded-token-loss"])
    text = verdict.embeds[0].description
    assert "the smallest case that differs from the reference (all 3 cases differ): " \
           "`token_loss(tensor(" in text
    assert "expected: `tensor(" in text and "got: `tensor(" in text


async def test_a_typo_before_any_case_returned_is_not_judged_and_the_card_stays_open(
        world, admin, store):
    """Issue 40.6: as for a train loop that stopped before training."""
    _, channel, ann, _ = world
    await upload_example(admin, channel)
    card, typo = await write(ann, channel, "attention", MASK_TYPO)
    embed = typo.embeds[0]
    assert embed.title == "Not judged: your code stopped before any case returned."
    assert "NameError: name 'kept' is not defined" in embed.description
    assert f"({FREE_RETRIES - 1} more such runs free on this card)" in embed.description
    assert "The answer" not in embed.description and "triu" not in embed.description
    serve_id = custom_ids(card)[0].split(":")[2]
    assert store.reviews.get(serve_id) is None
    again = await ann.submit_modal(await ann.click(typo, label="Write code"),
                                   {"code": RIGHT[MASK]})
    assert verdict_message(again).embeds[0].title == "Correct!"
    log = store.reviews.get(serve_id)
    assert (log.correct, log.attempts, log.chosen[0]["retries"]) == (True, 1, 1)


async def test_a_broken_exercise_is_refused_with_its_card_and_nothing_is_stored(
        world, admin, decks):
    guild, channel, *_ = world
    before = decks.summaries(guild.id)
    right = "e = (x - x.max(dim=-1, keepdim=True).values).exp()\n"  # the "mistake" is right
    fixed = EXAMPLE.read_text().replace("e = x.exp()\n", right, 1)
    message = final(await admin.slash(channel, "deck upload",
                                      file=("twins.yaml", fixed.encode())))
    assert message.content.startswith("**twins.yaml** was refused: The deck's behaviour "
                                      "exercises have problems; nothing was stored.")
    shown = await text_of(message)
    assert "pytorch-exercises/stable-softmax: version softmax_overflow cannot be told apart " \
           "from the reference on these cases" in shown, shown
    untouched(decks, guild.id, before)



class Noted:
    """The real judge, noting the thread each exercise is tried on."""

    def __init__(self, judge):
        self.judge, self.threads = judge, []

    def __getattr__(self, name):
        return getattr(self.judge, name)

    def vet(self, card, server):
        self.threads.append(threading.current_thread().name)
        return self.judge.vet(card, server)


async def test_an_uploads_exercises_are_tried_on_threads_of_their_own(world, admin,
                                                                      bot_tutor):
    """Issue 37.1: never on the threads that judge learners' answers."""
    _, channel, *_ = world
    noted = bot_tutor.code_judge = Noted(bot_tutor.code_judge)
    assert "was refused" not in await upload_example(admin, channel)
    assert len(noted.threads) == 3
    assert all(name.startswith("deck-trials") for name in noted.threads), noted.threads
