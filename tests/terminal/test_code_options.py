"""A missed code-option card in `tutor practice` (issue 40, point 7), for every such card of
the bundled deck: its options all read "This loop", so the feedback names each choice by the
letter it was shown under, and the revealed answer is the key's letter and its code."""

from __future__ import annotations

import io
import re
import textwrap

import pytest

from bot.app import build
from bot.terminal import Console
from tests.helpers.code_options import CODE_OPTION_CARDS, alone
from tests.helpers.engines import engine_of


def code_of(option) -> str:
    return textwrap.indent(option.code.rstrip("\n"), "       ")


@pytest.mark.parametrize("card_id", CODE_OPTION_CARDS)
def test_a_missed_code_option_card_names_letters_and_shows_the_keys_code(db_url, clock,
                                                                         card_id):
    library = alone(card_id)
    card = library.card(card_id)
    key = next(o for o in card.options if o.correct)
    wrong = [o for o in card.options if not o.correct][:3]
    out, feed = io.StringIO(), iter([*(o.id for o in wrong), "q"])

    def read(prompt: str) -> str:
        line = next(feed)
        out.write(f"{prompt}{line}\n")
        return line

    with build(database_url=db_url, library=library, clock=clock, sandbox=False) as app:
        learner = app.tutor.learner("local:sam", display_name="sam")
        Console(engine_of(app.tutor), learner, "gradient-accumulation", out=out,
                read=read).run()
    text = out.getvalue()
    shown = text.split("Answer >", 1)[0]

    def letter(option) -> str:  # the letter whose listing is this option's code, all of it
        # (one loop can be another's first lines: its listing must end where the code does)
        return next(x for x in "ABCDEFGH" if re.search(
            rf"^  {x}\) {re.escape(option.text)}\n{re.escape(code_of(option))}\n(?! {{7}})",
            shown, re.M))

    for option in wrong:
        assert f"You chose {letter(option)} ('{option.text}'): " in text
    revealed = text.split("Not this time.", 1)[1]
    assert f"The answer: {letter(key)}) {key.text}\n{code_of(key)}\n" in revealed
