"""The upload rules through the real discord.py client (issue 25, points 4, 5, 9, 10): what
an upload must satisfy so that every card it stores can be played to the end, and what the
engine does with a deck stored before a rule was.
"""

from __future__ import annotations

import re

import discord
import pytest

from bot.discord_ui.client import TutorBot
from bot.discord_ui.replies import APOLOGY
from bot.engine import CodeReport
from bot.engine.tutor import Tutor
from content import checkers
from content.schema import FillInCard
from tests.helpers.decks import renamed
from tests.helpers.discord import (
    card_id_of,
    choose,
    custom_ids,
    final,
    pick_and_submit,
    shown_options,
    text_of,
    verdict_message,
)
from tests.helpers.engines import engine_of
from tests.helpers.paths import COMMUNITY_DECK, FIXTURES

DECK = COMMUNITY_DECK
PAGE = (FIXTURES / "practice-page.txt").read_text(encoding="utf-8")
# A code card judged by train_loop, in a deck that registers only two of its mistakes.
PARTLY_REGISTERED = DECK.replace("mistakes:\n", """mistakes:
  - id: no_loss_scaling
    title: Loss not scaled
    explanation: Divide each micro-batch loss by accumulation_steps before backward().
  - id: step_every_batch
    title: Stepping every micro-batch
    explanation: Step once per window of accumulation_steps micro-batches.
""", 1) + """\
  - id: tensor-basics/loop
    type: code
    rev: 1
    difficulty: hard
    topics: [loop]
    prompt: Write the accumulation loop.
    starter: "# loop over dataloader\\n"
    given_names: [model, optimizer, criterion, dataloader, accumulation_steps]
    checker: train_loop
    mistakes: [no_loss_scaling, step_every_batch]
    hint: Backward every micro-batch, step every window.
    reference: "for x, y in dataloader: pass\\n"
    takeaway: Scale the loss, step once per window.
"""


# -- 4: a code card's checker reports ids the deck must explain ------------------------------

async def test_a_code_card_whose_deck_lacks_its_checkers_mistakes_is_refused(world, admin,
                                                                            decks):
    guild, channel, *_ = world
    message = final(await admin.slash(channel, "deck upload", file=(
        "loop.yaml", PARTLY_REGISTERED.encode())))
    shown = await text_of(message)
    assert message.content.startswith("**loop.yaml** was refused")
    line = PARTLY_REGISTERED[:PARTLY_REGISTERED.index("checker: train_loop")].count("\n") + 1
    problem = next(p for p in shown.splitlines() if p.startswith(f"line {line}, card "))
    unregistered = len(checkers.mistakes("train_loop")) - 2  # the deck registers two
    assert (f"checker 'train_loop' can report {unregistered} mistake(s) this deck does not "
            "register") in problem
    for missing in ("mismatched_scaling", "missing_zero_grad", "leftover_gradients"):
        assert missing in problem
    assert "tensor-basics" not in decks.ids(guild.id)


def half_judge(card, code: str, learner=None) -> CodeReport:
    """A checker's verdict naming one mistake the mini deck registers and one it does not."""
    return CodeReport("ok", False, ("no_scaling", "step_every_batch"),
                      ("the gradients were 4 times too large",
                       "optimizer.step() ran after every micro-batch"))


@pytest.fixture
def code_tutor(store, mini_library, clock) -> Tutor:
    return Tutor(store, mini_library, clock=clock, code_judge=half_judge)


@pytest.fixture
def simcord_bot(request, bot_tutor) -> TutorBot:
    if "code_tutor" in request.fixturenames:
        return TutorBot(engine_of(request.getfixturevalue("code_tutor")))
    return TutorBot(engine_of(bot_tutor))


async def test_a_mistake_the_deck_does_not_register_is_told_in_the_checkers_words(
        world, store, code_tutor):
    """A deck stored before the rule (the mini deck registers one of train_loop's ids): the
    verdict explains what it can and tells the rest as the checker measured it."""
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loop")).response
    shown = await ann.click(card, label="Write code")
    result = await ann.submit_modal(shown, {"code": "for x in dataloader:\n    pass\n"})
    verdict = verdict_message(result)
    assert APOLOGY not in (verdict.content or "")
    text = verdict.embeds[0].description
    assert verdict.embeds[0].title == "Not this time."
    assert "• **No scaling**: the gradients were" in text  # a bullet per failed check
    assert "• optimizer.step() ran after every micro-batch" in text
    log = store.reviews.get(custom_ids(card)[0].split(":")[2])
    assert (log.correct, log.mistake_ids) == (False, ["no_scaling"])


# -- 5: a version that keeps content_rev keeps every choice -----------------------------------

SAME = ("      - {id: same, text: The very same x object, mistake: in_place, says: x is left "
        "as it was.}\n")
DROPPED = DECK.replace("version: 1", "version: 2").replace(SAME, "")


def second_version(content_rev: bool) -> str:
    bumped = "rev: 2\n    content_rev: 2" if content_rev else "rev: 2\n    content_rev: 1"
    return DROPPED.replace("rev: 1", bumped, 1)


async def test_a_version_that_drops_an_option_must_bump_content_rev(world, admin, decks):
    guild, channel, *_ = world
    await admin.slash(channel, "deck upload", file=("v1.yaml", DECK.encode()))
    typo = second_version(content_rev=False)
    refused = await text_of(final(await admin.slash(channel, "deck upload", file=(
        "v2.yaml", typo.encode()))))
    line = typo[:typo.index("content_rev: 1")].count("\n") + 1
    assert (f"line {line}, card tensor-basics/move: the card accepts other answers than in "
            "version 1 (option(s) same were removed) but its content_rev is still 1") in refused
    assert decks.summaries(guild.id)[-1].version == 1
    bumped = final(await admin.slash(channel, "deck upload", file=(
        "v2.yaml", second_version(content_rev=True).encode())))
    assert "version 2" in bumped.content


async def test_a_card_in_play_copes_with_a_choice_a_stored_version_dropped(
        world, admin, decks, monkeypatch):
    """A version stored before the rule (the check is switched off here) dropped the option
    the learner already chose: the next click is judged and the card finishes."""
    _, channel, ann, _ = world
    await admin.slash(channel, "deck upload", file=("v1.yaml", DECK.encode()))
    await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    card = (await ann.slash(channel, "learn")).response
    assert card_id_of(decks.tutor.store, card) == "tensor-basics/move"
    first = await choose(ann, card, "same")
    assert first.response.embeds[-1].title.startswith("Not quite.")
    monkeypatch.setattr("bot.engine.community_decks.accepts_changed", lambda old, new: None,
                        raising=False)
    up = final(await admin.slash(channel, "deck upload", file=(
        "v2.yaml", second_version(content_rev=False).encode())))
    assert "version 2" in up.content
    second = await choose(ann, first.response, "none")
    assert APOLOGY not in (second.response.content or "")
    assert second.response.embeds[-1].title.startswith("Not quite.")
    third = await choose(ann, second.response, "copy")
    assert third.response.embeds[-1].title.startswith("Correct")


async def test_a_fill_in_card_copes_with_a_chip_a_stored_version_dropped(world, admin, monkeypatch,
                                                                       store):
    _, channel, ann, _ = world
    await admin.slash(channel, "deck upload", file=("v1.yaml", DECK.encode()))
    await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    await choose(ann, (await ann.slash(channel, "learn")).response, "copy")
    card = (await ann.slash(channel, "learn")).response
    assert card_id_of(store, card) == "tensor-basics/shape"
    wrong = await pick_and_submit(ann, card, {"attr": "dtype"})
    assert wrong.response.embeds[-1].title.startswith("Not quite.")
    monkeypatch.setattr("bot.engine.community_decks.accepts_changed", lambda old, new: None,
                        raising=False)
    v2 = DECK.replace("version: 1", "version: 2").replace(
        "      - {id: dtype, text: dtype}\n", "").replace(
        "          dtype: {mistake: wrong_attribute, says: dtype is the element type.}\n", "")
    v2 = v2[:v2.index("  - id: tensor-basics/shape")] + v2[v2.index(
        "  - id: tensor-basics/shape"):].replace("rev: 1", "rev: 2\n    content_rev: 1", 1)
    assert "version 2" in final(await admin.slash(channel, "deck upload", file=(
        "v2.yaml", v2.encode()))).content
    asked = await ann.click(wrong.response, label="Submit")
    assert "Pick an option for blank [1] first." in asked.response.content
    done = await pick_and_submit(ann, wrong.response, {"attr": "shape"})
    assert done.response.embeds[-1].title.startswith("Correct")


# -- 9: the bundled deck's export is a deck an upload accepts ---------------------------------

async def test_the_bundled_deck_exported_and_uploaded_back_plays_the_same_cards(
        world, admin, simcord_env, library, store):
    _, channel, _, bob = world
    exported = final(await admin.slash(channel, "deck export", deck="gradient-accumulation",
                                       format="yaml"))
    [attached] = exported.attachments
    copy = renamed((await attached.read()).decode(), "ga-copy")
    # Bob learns from the bundled deck here; Cat, on another server, from the copy.
    there = simcord_env.create_guild(name="Copy Group")
    hall = there.create_text_channel("hall")
    boss = there.add_member(simcord_env.create_user("boss"), roles=[there.create_role(
        "Admins", permissions=discord.Permissions(manage_guild=True))])
    cat = there.add_member(simcord_env.create_user("cat"))
    up = final(await boss.slash(hall, "deck upload", file=("ga-copy.yaml", copy.encode())))
    bundled = library.deck("gradient-accumulation")
    assert up.content.startswith(f"Uploaded **{bundled.title}** (`ga-copy`), a new deck: "
                                 f"version 1, {len(bundled.cards)} cards")
    off = await boss.slash(hall, "deck disable", deck="gradient-accumulation")
    assert "(`ga-copy`)" in off.response.content and "gradient-accumulation" not in (
        off.response.content)
    kinds = set()
    for _ in range(6):  # the same new cards, in the same order, judged alike
        original = (await bob.slash(channel, "learn")).response
        copied = (await cat.slash(hall, "learn")).response
        card_id = card_id_of(store, original)
        assert card_id_of(store, copied) == card_id.replace("gradient-accumulation/",
                                                            "ga-copy/")
        card = bundled.card(card_id)
        kinds.add(card.type)
        assert shown_card(copied) == shown_card(original)
        said = [await answer(who, message, card, right=False)
                for who, message in ((bob, original), (cat, copied))]
        told = [r.response.embeds[-1] for r in said]
        assert told[0].title == told[1].title and told[0].title.startswith("Not quite.")
        assert strip_letters(told[0].description) == strip_letters(told[1].description)
        done = [(await answer(who, r.response, card, right=True)).response.embeds[-1].title
                for who, r in zip((bob, cat), said, strict=True)]
        assert done[0] == done[1] and done[0].startswith("Correct")
    assert kinds == {"fill_in", "multiple_choice"}


def shown_card(message) -> tuple:
    """The card's text (letters aside) and its choices, whatever order this serve shows."""
    choices = sorted(shown_options(message).values()) or sorted(
        label for row in message.components for c in row["components"]
        if c.get("custom_id", "").startswith("srs:pick:") for label in [
            o["label"] for o in c["options"]])
    lines = re.sub(r"(?m)^\*\*[A-Z]\.\*\* ", "", message.embeds[0].description).splitlines()
    return sorted(lines), choices


async def answer(who, message, card, *, right: bool):
    """Answer the card as shown: its key, or its first wrong choice in deck order."""
    if isinstance(card, FillInCard):
        return await pick_and_submit(who, message, {
            b.id: b.answer if right else next(iter(b.wrong)) for b in card.blanks})
    return await choose(who, message, next(o.id for o in card.options if o.correct == right))


def strip_letters(text: str) -> str:
    return re.sub(r"\*\*[A-Z]\. ", "**", text)


# -- 10: a draft's placeholders are not a deck -------------------------------------------------

async def test_a_draft_with_only_its_pragma_deleted_is_refused_for_its_placeholders(
        world, admin, decks):
    guild, channel, *_ = world
    page = final(await admin.slash(channel, "deck upload", file=(
        "practice-page.txt", PAGE.encode())))
    draft = next(a for a in page.attachments if a.filename.endswith(".draft.yaml"))
    text = "\n".join(line for line in (await draft.read()).decode().splitlines()
                     if "allow-giveaways" not in line) + "\n"
    message = final(await admin.slash(channel, "deck upload", file=(
        "draft.yaml", text.encode())))
    shown = await text_of(message)
    assert message.content.startswith("**draft.yaml** was refused")
    assert 'hint is a draft\'s placeholder ("TODO: write a hint")' in shown
    assert "says is a draft's placeholder (\"TODO: say what choosing" in shown
    deck_id = re.search(r"^id: (\S+)$", text, re.M)[1]
    assert deck_id not in decks.ids(guild.id)
