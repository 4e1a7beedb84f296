"""A code-option card missed in Discord: every option reads "This loop", so the feedback
names each choice by the letter it was shown under and reveals the key with its code."""

from __future__ import annotations

from datetime import date

from bot.discord_ui.render import feedback_embed
from content.loader import DeckLibrary
from content.safe_text import code_block, markdown
from tests.helpers.discord import letter_for, shown_options

CLIP = "gradient-accumulation/clip-placement"  # the "clipping" topic's only card


async def test_a_missed_code_option_card_names_letters_and_shows_the_keys_code(world, library):
    _, channel, ann, _ = world
    card = library.card(CLIP)
    key = next(o for o in card.options if o.correct)
    assert key.code and key.text == "This loop"  # the case this test is for
    message = (await ann.slash(channel, "practice", topic="clipping")).response
    listed, key_letter = shown_options(message), letter_for(message, key.id)
    wrong = [o for o in card.options if not o.correct][:3]
    for option in wrong:
        letter = letter_for(message, option.id)
        message = (await ann.click(message, label=letter)).response
        # The letter the learner clicked, as the card above still lists it.
        assert f"**{letter}. {markdown(option.text)}**: " in message.embeds[1].description
        assert shown_options(message) == listed
    told = message.embeds[1]
    assert told.title == "Not this time."
    answer = f"**The answer:** **{key_letter}.** This loop\n"
    assert answer + code_block(key.code) in told.description
    assert told.description.count("```") % 2 == 0


def test_code_too_long_for_the_embed_is_clipped_with_its_block_closed(bot_tutor):
    served = bot_tutor.next_card(bot_tutor.learner("local:ann"), only=CLIP)
    card = bot_tutor.card(served)
    for option in [o for o in card.options if not o.correct][:3]:
        verdict = bot_tutor.answer(served, option.id)
        served = verdict.served
    # A stranger's deck could carry more code than an embed holds (uploads are refused
    # past the limit; a clipped render must still be valid markdown).
    long = "x = 1  # ```\n" * 600
    huge = card.model_copy(update={"options": [
        o.model_copy(update={"code": long}) if o.correct else o for o in card.options]})
    embed = feedback_embed(huge, verdict, date(2026, 12, 2))
    assert len(embed.description) <= 4096 and embed.description.count("```") % 2 == 0
    assert embed.description.endswith("…\n```")


def test_an_upload_whose_key_code_overflows_the_feedback_is_refused():
    from bot.engine.deck_limits import check_limits

    deck = DeckLibrary.load().deck("gradient-accumulation")
    card = deck.card(CLIP)
    long = "x = 1\n" * 700
    huge = card.model_copy(update={"options": [
        o.model_copy(update={"code": long}) if o.correct else o for o in card.options]})
    index = deck.cards.index(card)
    problems = check_limits(deck.model_copy(update={"cards": [
        *deck.cards[:index], huge, *deck.cards[index + 1:]]}))
    assert any(path == ("cards", index, "takeaway") and "feedback after a last wrong attempt"
               in message for path, message in problems)
