"""Content lint: the code in the canonical deck behaves as the deck says it does.

Every multiple-choice option that shows code runs through the train_loop checker, in the
checker's own scenarios. The options are one-epoch loops over `dataloader` using the given
names; the checker runs such a loop once per epoch (see content/checkers/train_loop.py), so no
adaptation is needed. An option whose code is only a fragment (it raises, e.g. NameError)
fails here: make it a runnable loop over the code card's given names.
"""

from __future__ import annotations

import contextlib
import io

import pytest

pytest.importorskip("torch")

from content.checkers import amp_clip_loop  # noqa: E402
from content.checkers.train_loop import MISTAKES, check  # noqa: E402
from content.loader import DECKS_DIR, load_deck  # noqa: E402
from content.schema import ChoiceCard, CodeCard  # noqa: E402

DECK = load_deck(DECKS_DIR / "gradient-accumulation.yaml")
CODE_CARD = DECK.card("gradient-accumulation/train-loop")
# The seed's cards use only the train-loop card's given names; the AMP card's options run
# in the AMP card's scenarios. The scheduler and clipping cards need names no checker
# scenario gives (a scheduler sized in updates): what their options claim torch does is
# checked in tests/deck_claims/test_tools.py.
AMP_CARD = "gradient-accumulation/amp-steps"
OPTIONS = [(card.id, option) for card in DECK.cards if isinstance(card, ChoiceCard)
           and (card.source.startswith("seed") or card.id == AMP_CARD)
           for option in card.options if option.code]
AMP_MISTAKES = set(amp_clip_loop.MISTAKES)
# Snippets shown in a card's prompt (not options): what the card's answer says they do.
SNIPPETS = {
    "gradient-accumulation/printed-loss": [],
    "gradient-accumulation/off-by-one": ["off_by_one_modulo"],
}


def quiet_check(code: str) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):  # snippets may print
        return check(code)


def test_the_deck_has_code_options():
    assert len(OPTIONS) >= 4


@pytest.mark.parametrize("card_id, option", OPTIONS, ids=[f"{c}:{o.id}" for c, o in OPTIONS])
def test_option_code_behaves_as_the_deck_says(card_id, option):
    amp = card_id == AMP_CARD
    with contextlib.redirect_stdout(io.StringIO()):
        result = amp_clip_loop.check(option.code) if amp else check(option.code)
    if amp and result["status"] != "ok":  # torch refuses the order: said in plain words
        assert option.mistake in result["mistakes"], result["feedback"]
        return
    assert result["status"] == "ok", f"{card_id} option {option.id}: {result['feedback']}"
    if option.correct:
        assert result["passed"] and result["mistakes"] == [], result["feedback"]
    elif option.mistake in (AMP_MISTAKES if amp else MISTAKES):
        assert result["mistakes"] == [option.mistake], result["feedback"]
    else:
        assert not result["passed"], f"wrong option {option.id} passes the checker"


def test_code_card_reference_passes():
    assert isinstance(CODE_CARD, CodeCard) and CODE_CARD.checker == "train_loop"
    result = quiet_check(CODE_CARD.reference)
    assert result == {"status": "ok", "passed": True, "mistakes": [], "feedback": [],
                      "error": None}


def test_code_card_lists_exactly_the_checkers_mistakes():
    assert sorted(CODE_CARD.mistakes) == sorted(MISTAKES)


@pytest.mark.parametrize("card_id", SNIPPETS)
def test_prompt_snippets_behave_as_their_cards_say(card_id):
    card = DECK.card(card_id)
    assert isinstance(card, ChoiceCard) and card.code
    result = quiet_check(card.code)
    assert result["status"] == "ok" and result["mistakes"] == SNIPPETS[card_id]
