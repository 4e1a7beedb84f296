"""Code cards on a phone (issue 41, point 5, and the phone-screen limit), through the real
discord.py client and the real sandbox: a wrong code verdict leads with a bullet per failed
check (each mistake's explanation folded to its first sentence), shows no reference inline
but a button that shows it once the card is finished, and every message of a code card's
flow (the card, a run that was not judged, a judged run, the reference) fits one phone
screen (PHONE_SCREEN characters), for each code card of the bundled deck and of the example
exercise deck."""

from __future__ import annotations

import pytest

from bot.discord_ui.client import TutorBot
from bot.discord_ui.render import PHONE_SCREEN
from content.loader import DeckLibrary
from content.safe_text import code_block
from content.schema import CodeCard
from tests.helpers.amp_loops import BUGGY
from tests.helpers.discord import custom_ids, served_id, verdict_message
from tests.helpers.engines import engine_of
from tests.helpers.exercises import EXAMPLE, UNLABELLED
from tests.helpers.phone import labels, on_screen

BUNDLED = DeckLibrary.load()
EXERCISES = DeckLibrary.load([EXAMPLE])
TRAIN_LOOP = "gradient-accumulation/train-loop"
# Two checks fail (issue 41.5): the loss is not scaled, and with no zero_grad() at the start
# of an epoch its partial last window leaks into the next epoch's first update.
TWO_WRONG = """\
model.train()
for epoch in range(num_epochs):
    for i, (inputs, labels) in enumerate(dataloader):
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
TYPO = "for i, (inputs, labels) in enumerate(dataloader:\n    pass\n"  # a SyntaxError
WRONG = {TRAIN_LOOP: TWO_WRONG,
         "gradient-accumulation/amp-clip-loop": BUGGY["everything_every_micro_batch"][0],
         **UNLABELLED}
CODE_CARDS = [(library, card.id) for library in (BUNDLED, EXERCISES)
              for card in library.cards() if isinstance(card, CodeCard)]
assert sorted(card_id for _, card_id in CODE_CARDS) == sorted(WRONG)  # each one is tested


def alone(library: DeckLibrary, card_id: str) -> DeckLibrary:
    deck = library.deck_of(card_id)
    return DeckLibrary([deck.model_copy(update={"cards": [deck.card(card_id)]})])


@pytest.fixture
def deck_library() -> DeckLibrary:
    """The training-loop card alone (/practice serves it); tests of the others say theirs."""
    return alone(BUNDLED, TRAIN_LOOP)


@pytest.fixture
def simcord_bot(bot_tutor, sandbox_judge) -> TutorBot:
    # Each test's database numbers its learner 1: the module's runs are one learner's to
    # the sandbox's rate limit (6 a minute), more than that here.
    sandbox_judge.client.runs_per_minute = 100
    bot_tutor.code_judge = sandbox_judge
    return TutorBot(engine_of(bot_tutor))


async def run(learner, message, code: str):
    return verdict_message(await learner.submit_modal(
        await learner.click(message, label="Write code"), {"code": code}))


async def test_a_wrong_loop_is_told_a_bullet_per_failed_check_and_the_loop_on_request(
        world, store, deck_library):
    _, channel, ann, bob = world
    card = (await ann.slash(channel, "practice")).response
    verdict = await run(ann, card, TWO_WRONG)
    embed = verdict.embeds[0]
    assert embed.title == "Not this time."
    bullets = embed.description.split("\n\n")[0].split("\n")
    assert bullets == [
        "• **Loss not scaled**: the loss was not divided by accumulation_steps (4), so every "
        "update used gradients 4x too large. backward() adds each micro-batch's gradient into "
        ".grad, so after accumulation_steps micro-batches the stored gradient is the SUM of "
        "their gradients.",
        "• **Partial last window leaks into the next epoch**: warning: with accumulation_steps "
        "= 3, 10 micro-batches per epoch, the gradients of batch 10 at the end of epoch 1 "
        "never reached optimizer.step() and were not cleared, so they were added to the "
        "first update of epoch 2, which then held 4 micro-batches instead of 3. When windows "
        "are counted within each epoch and len(dataloader) is not a multiple of "
        "accumulation_steps, the last few micro-batches of an epoch never reach the window "
        "condition: their gradients stay in .grad and are added to the first window of the "
        "next epoch, which then holds more than accumulation_steps micro-batches."]
    reference = deck_library.card(TRAIN_LOOP).reference
    assert "```" not in embed.description and "The answer" not in embed.description
    assert embed.description.endswith("Next review of this card: **tomorrow**.")
    assert labels(verdict) == ["Next card", "Show a correct loop"]
    assert store.reviews.get(served_id(card)).mistake_ids == ["leftover_gradients",
                                                              "no_loss_scaling"]

    shown = (await ann.click(verdict, label="Show a correct loop")).response
    assert shown.ephemeral
    assert shown.embeds[0].title == "Show a correct loop"
    assert shown.embeds[0].description == code_block(reference)
    assert labels(verdict) == ["Next card", "Show a correct loop"]  # still there, for later


async def test_the_reference_is_not_shown_before_the_card_is_answered(world, deck_library):
    """A forged click on a card still open (the button is only under a finished verdict)."""
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice")).response
    forged = card._message.components  # SimCord's stored message: a button sent by hand
    forged[0]["components"].append({"type": 2, "style": 2, "label": "Peek",
                                     "custom_id": f"srs:ref:{served_id(card)}"})
    said = (await ann.click(card, label="Peek")).response
    assert said.ephemeral and not said.embeds
    assert "once the card is answered" in said.content


@pytest.mark.parametrize("deck_library,card_id",
                         [(alone(library, card_id), card_id) for library, card_id in CODE_CARDS],
                         ids=[card_id.split("/")[1] for _, card_id in CODE_CARDS])
async def test_every_message_of_a_code_card_fits_a_phone_screen(world, deck_library, card_id):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice")).response
    assert card.embeds[0].footer.text == "Syntax errors are free (up to 3); one run is graded."
    retry = await run(ann, card, TYPO)
    assert retry.embeds[0].title.startswith("Not judged")
    verdict = await run(ann, retry, WRONG[card_id])
    assert verdict.embeds and verdict.embeds[0].title == "Not this time.", verdict.content
    name = "loop" if card_id.startswith("gradient") else "solution"
    shown = (await ann.click(verdict, label=f"Show a correct {name}")).response
    sizes = {"card": on_screen(card), "not judged": on_screen(retry),
             "verdict": on_screen(verdict), "reference": on_screen(shown)}
    assert max(sizes.values()) <= PHONE_SCREEN, sizes
    assert custom_ids(verdict)[0].startswith("srs:next:")
