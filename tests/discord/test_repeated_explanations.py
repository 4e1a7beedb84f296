"""Through the real discord.py client, on the bundled deck: a mistake's registry explanation
waits for the card's final verdict, and is shown there once (a second blank on the same
mistake names it)."""

from __future__ import annotations

from content.safe_text import markdown
from tests.helpers.discord import card_id_of, pick_and_submit

SCALE_LOSS = "gradient-accumulation/scale-loss"
MISTAKE = "confuses_value_with_method"  # backward in [1] and accumulation_steps in [2]


async def test_a_mistake_in_two_blanks_and_two_attempts_is_explained_once(world, library,
                                                                          store):
    _, channel, ann, _ = world
    card = (await ann.slash(channel, "practice", topic="loss-scaling")).response
    assert card_id_of(store, card) == SCALE_LOSS
    mistake = library.mistake(SCALE_LOSS, MISTAKE)
    full = f"> **{markdown(mistake.title)}.** {markdown(mistake.explanation)}"
    short = f"> **{markdown(mistake.title)}** (explained above)."
    first = (await pick_and_submit(ann, card, {"divisor": "backward",
                                               "method": "step"})).response
    text = first.embeds[1].description  # [1] backward is this mistake too
    assert markdown(mistake.title) not in text and full not in text  # before the last try
    second = (await pick_and_submit(ann, first, {"divisor": "step",
                                                 "method": "backward"})).response
    assert markdown(mistake.title) not in second.embeds[1].description
    third = (await pick_and_submit(ann, second, {"divisor": "backward",
                                                 "method": "accumulation_steps"})).response
    text = third.embeds[1].description
    assert third.embeds[1].title == "Not this time."
    assert text.count(full) == 1 and text.count(short) == 1
    assert text.index(full) < text.index(short)
    divisor = next(b for b in library.card(SCALE_LOSS).blanks if b.id == "divisor")
    assert f"**[1] `backward`**: {markdown(divisor.wrong['backward'].says)}" in text
