"""A card's controls as Discord gets them (`render.card_view`): every option, blank and
button inside Discord's five rows of five, in the order the learner reads them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import discord
import pytest

from bot.discord_ui import components as c
from bot.discord_ui.render import card_embed, card_view, feedback_embed, next_view
from bot.engine.served import preview
from content.schema import ChoiceCard, CodeCard, FillInCard
from tests.helpers.engines import engine_of

AT = datetime(2026, 12, 4, tzinfo=UTC)


def rows(view) -> list[list[str]]:
    """Each row's labels (a select: its placeholder)."""
    return [[item.get("label") or item["placeholder"] for item in row["components"]]
            for row in view.to_components()]


def first(library, kind):
    return next(card for card in library.cards() if isinstance(card, kind))


def with_options(card: ChoiceCard, n: int) -> ChoiceCard:
    extra = [card.options[-1].model_copy(update={"id": f"extra-{i}"})
             for i in range(n - len(card.options))]
    return card.model_copy(update={"options": [*card.options, *extra]})


@pytest.mark.parametrize(("options", "expected"), [
    (4, [list("ABCD"), ["Hint"]]),
    (7, [list("ABCDE"), list("FG"), ["Hint"]]),
    (20, [list("ABCDE"), list("FGHIJ"), list("KLMNO"), list("PQRST"), ["Hint"]]),
    (24, [list("ABCDE"), list("FGHIJ"), list("KLMNO"), list("PQRST"), [*"UVWX", "Hint"]]),
])
def test_a_choice_card_s_options_fill_rows_of_five_and_the_hint_follows(library, options,
                                                                         expected):
    """Up to 24 options pass an upload's checks (bot.engine.deck_limits); more than five
    once made discord.py refuse to render the card at all."""
    card = with_options(first(library, ChoiceCard), options)
    assert rows(card_view(card, preview(card.id, card.rev, AT))) == expected


def test_a_fill_in_card_has_a_select_a_blank_then_submit_and_the_hint(library):
    card = first(library, FillInCard)
    served = preview(card.id, card.rev, AT)
    blanks = [f"Blank [{i}]" for i in range(1, len(card.blanks) + 1)]
    assert rows(card_view(card, served)) == [*([b] for b in blanks), ["Submit"], ["Hint"]]
    four = card.model_copy(update={"blanks": [card.blanks[0].model_copy(
        update={"id": f"b{i}"}) for i in range(4)]})
    assert rows(card_view(four, preview(four.id, four.rev, AT)))[-1] == ["Submit", "Hint"]


def test_a_pick_shows_as_picked_and_a_used_hint_is_gone(library):
    card = first(library, FillInCard)
    blank, chip = card.blanks[0], card.chips[1]
    served = preview(card.id, card.rev, AT)
    view = card_view(card, replace(served, hint_used=True), {blank.id: chip.id})
    select = view.to_components()[0]["components"][0]
    assert [o["value"] for o in select["options"] if o["default"]] == [chip.id]
    assert "Hint" not in sum(rows(view), [])


def test_a_code_card_opens_the_editor_beside_the_hint(library):
    card = first(library, CodeCard)
    assert rows(card_view(card, preview(card.id, card.rev, AT))) == [["Write code", "Hint"]]


def test_controls_are_the_json_discord_py_would_write(library):
    """Built as JSON (ten times cheaper): exactly what discord.py's own items give."""
    card = first(library, FillInCard)
    view = card_view(card, preview(card.id, card.rev, AT))
    select, = view.to_components()[0]["components"]
    theirs = discord.ui.Select(custom_id=select["custom_id"], placeholder=select["placeholder"],
                               options=[discord.SelectOption(label=o["label"], value=o["value"],
                                                             default=o["default"])
                                        for o in select["options"]])
    assert select == theirs.to_component_dict()
    hint = view.to_components()[-1]["components"][0]
    assert hint == discord.ui.Button(label="Hint", emoji="💡", custom_id=hint["custom_id"],
                                     style=discord.ButtonStyle.secondary).to_component_dict()
    (nxt,), = [row["components"] for row in next_view("learn", None).to_components()]
    assert nxt == discord.ui.Button(label="Next card", custom_id="srs:next:learn",
                                    style=discord.ButtonStyle.primary).to_component_dict()


def test_more_than_discord_holds_is_refused_before_sending():
    with pytest.raises(ValueError):
        c.RoutedView([[c.button(str(i), f"x:{i}") for i in range(6)]])
    with pytest.raises(ValueError):
        c.RoutedView([[c.button("a", "x:a")]] * 6)


def test_a_card_s_and_a_verdict_s_embeds_are_the_json_discord_py_would_write(tutor):
    """Their JSON is built from the fields they set (cheaper): discord.py's own to_dict
    gives the same, for a card before and after its hint, and each kind of verdict."""
    play = engine_of(tutor).cards
    learner = tutor.learner("discord:1")
    playing = play.serve(learner, card_id="gradient-accumulation/purpose")
    card, served = playing.card, playing.served
    wrong, right = (next(o.id for o in card.options if o.correct is want)
                    for want in (False, True))
    first = play.answer(served.serve_id, 0, learner, wrong)
    hinted = play.hint(served.serve_id, 1, learner).served
    done = play.answer(served.serve_id, 1, learner, right)
    today = tutor.served_today(done.served)
    embeds = [card_embed(card, served), card_embed(card, hinted),
              card_embed(card, done.served, finished=True),
              feedback_embed(card, first, today), feedback_embed(card, done, today),
              feedback_embed(card, replace(done, duplicate=True), today)]
    assert any("fields" in e.to_dict() for e in embeds)
    assert any("footer" in e.to_dict() for e in embeds)
    for embed in embeds:
        assert embed.to_dict() == discord.Embed.to_dict(embed)
