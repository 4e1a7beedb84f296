"""A missed code-option card in Discord (issue 40, point 7), for every such card of the
bundled deck: its options all read "This loop", so the feedback names each choice by the
letter it was shown under and reveals the key's letter with its code."""

from __future__ import annotations

import pytest

from content.safe_text import code_block, markdown
from tests.helpers.code_options import CODE_OPTION_CARDS, alone
from tests.helpers.discord import letter_for, shown_options


@pytest.fixture(params=CODE_OPTION_CARDS)
def deck_library(request):
    """The bot plays one code-option card (each in turn): /practice serves it."""
    return alone(request.param)


async def test_a_missed_code_option_card_names_letters_and_shows_the_keys_code(world,
                                                                             deck_library):
    _, channel, ann, _ = world
    (card,) = deck_library.cards()
    key = next(o for o in card.options if o.correct)
    message = (await ann.slash(channel, "practice")).response
    listed, key_letter = shown_options(message), letter_for(message, key.id)  # this card
    for option in [o for o in card.options if not o.correct][:3]:
        letter = letter_for(message, option.id)
        message = (await ann.click(message, label=letter)).response
        # The letter the learner clicked, as the card above still lists it.
        assert f"**{letter}. {markdown(option.text)}**: " in message.embeds[1].description
        assert shown_options(message) == listed
    told = message.embeds[1]
    assert told.title == "Not this time."
    answer = f"**The answer:** **{key_letter}.** {markdown(key.text)}\n"
    assert answer + code_block(key.code) in told.description
    assert told.description.count("```") % 2 == 0
