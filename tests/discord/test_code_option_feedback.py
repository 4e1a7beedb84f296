"""A code-option card's revealed code in Discord, within the embed's limits (each card's
letters and code: tests/discord/test_code_option_cards.py)."""

from __future__ import annotations

from datetime import date

from bot.discord_ui.render import feedback_embed
from content.loader import DeckLibrary

CLIP = "gradient-accumulation/clip-placement"


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
