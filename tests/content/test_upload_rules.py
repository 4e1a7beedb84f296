"""The upload rules (content/untrusted.py, bot/engine/deck_limits.py, content/versions.py)
on real material: the bundled deck passes them, the importer's draft does not."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml

from bot.engine.deck_limits import check_limits
from bot.engine.feedback import card_text
from bot.engine.judging import mistakes_of
from content import checkers
from content.checkers import amp_clip_loop, train_loop
from content.importer import import_page
from content.loader import DECKS_DIR, load_deck, parse_deck
from content.placeholders import is_placeholder, placeholder_problems
from content.safe_text import code_block
from content.untrusted import UntrustedDeck, parse_untrusted
from content.versions import accepts_changed
from tests.helpers.exercises import EXAMPLE
from tests.helpers.paths import COMMUNITY_DECK, FIXTURES

BUNDLED = DECKS_DIR / "gradient-accumulation.yaml"


def test_the_bundled_deck_passes_every_upload_check_as_filed_and_as_exported():
    deck, _ = parse_untrusted(BUNDLED.read_bytes(), check_limits)
    exported = yaml.safe_dump(deck.model_dump(mode="json", exclude_defaults=True),
                              sort_keys=False, allow_unicode=True)
    again, _ = parse_untrusted(exported.encode(), check_limits)
    assert again == deck


def test_a_checkers_mistakes_are_its_judges_list():
    assert checkers.mistakes("train_loop") == train_loop.MISTAKES
    assert checkers.mistakes("amp_clip_loop") == amp_clip_loop.MISTAKES
    # The AMP judge also names a mistake when torch refuses a scaler call: one of its list.
    source = Path(checkers.__file__).with_name("_scaler_errors.py").read_text()
    assert set(re.findall(r'return \("([a-z_]+)",', source)) <= set(amp_clip_loop.MISTAKES)


def test_each_code_card_must_list_what_its_checker_reports():
    text = BUNDLED.read_text()
    kept = "      - no_loss_scaling\n"  # the train-loop card's list, one id dropped
    start = text.index("    checker: train_loop")
    dropped = text[:start] + text[start:].replace(kept, "", 1)
    with pytest.raises(UntrustedDeck) as refused:
        parse_untrusted(dropped.encode(), check_limits)
    assert [p.split(": ", 1)[1] for p in refused.value.problems] == [
        "the card's mistakes leave out no_loss_scaling, which checker 'train_loop' can "
        "report: list every one"]


def test_a_behaviour_card_needs_its_exercise_with_a_version_per_mistake():
    text = BUNDLED.read_text().replace("    checker: train_loop", "    checker: behaviour", 1)
    with pytest.raises(UntrustedDeck) as refused:
        parse_untrusted(text.encode(), check_limits)
    assert [p.split(": ", 1)[1] for p in refused.value.problems] == [
        "checker 'behaviour' needs the card's behaviour block: entry, cases, compare and "
        "versions"]
    example = EXAMPLE.read_text()
    unlisted = example.replace("mistakes: [softmax_overflow, softmax_wrong_axis]",
                               "mistakes: [softmax_overflow]")
    with pytest.raises(UntrustedDeck) as refused:
        parse_untrusted(unlisted.encode(), check_limits)
    assert [p.split(": ", 1)[1] for p in refused.value.problems] == [  # in line order
        "mistake 'softmax_wrong_axis' is never used by a card",
        "version 'softmax_wrong_axis' is not one of the card's mistakes: list it there too"]
    assert refused.value.problems[0].split(": ")[0].endswith(", mistake softmax_wrong_axis")
    stray = example.replace("    checker: behaviour", "    checker: train_loop", 1)
    with pytest.raises(UntrustedDeck) as refused:
        parse_untrusted(stray.encode(), check_limits)
    assert "a behaviour block is read only with 'checker: behaviour', not 'train_loop'" in [
        p.split(": ", 1)[1] for p in refused.value.problems]


def test_the_importers_draft_is_refused_for_its_placeholders_only():
    page = (FIXTURES / "practice-page.txt").read_text()
    draft, _ = import_page(page, deck_id="practice-page")
    text = "".join(line for line in draft.splitlines(True) if "allow-giveaways" not in line)
    with pytest.raises(UntrustedDeck) as refused:
        parse_untrusted(text.encode(), check_limits)
    problems = refused.value.problems
    assert problems and all("a draft's placeholder" in p for p in problems), problems
    for line in problems:  # each names the line of the text it quotes
        number, quoted = re.match(r'line (\d+), .*?\("(.{8})', line).groups()
        assert quoted in text.splitlines()[int(number) - 1] + text.splitlines()[int(number)]


def test_placeholders_in_prose_only():
    assert is_placeholder("TODO: write a hint") and is_placeholder("(placeholder: to be written)")
    assert not is_placeholder("Keep the todo list short")
    deck = load_deck(BUNDLED)
    card = next(c for c in deck.cards if c.type == "code")
    starter = card.model_copy(update={"starter": "# TODO: your loop\n" + card.starter})
    assert placeholder_problems(deck.model_copy(update={"cards": [starter]})) == []


DECK = COMMUNITY_DECK


DTYPE = "          dtype: {mistake: wrong_attribute, says: dtype is the element type.}\n"


@pytest.mark.parametrize("edits, why", [
    ([("      - {id: same, text: The very same x object, mistake: in_place, says: x is left "
       "as it was.}\n", "")], "option(s) same were removed"),
    ([("      - {id: dtype, text: dtype}\n", ""), (DTYPE, "")], "chip(s) dtype were removed"),
    ([("{id: copy, text: A new tensor on the GPU, correct: true}",
       "{id: copy, text: A new tensor on the GPU, mistake: in_place, says: A copy.}"),
      ("{id: none, text: Nothing at all, mistake: in_place, says: It returns a tensor.}",
       "{id: none, text: Nothing at all, correct: true}")],
     "the correct option is no longer 'copy'"),
    ([("It returns a tensor.", "It gives back a tensor.")], None),  # a reworded choice
])
def test_what_a_version_may_not_change_without_content_rev(edits, why):
    new = DECK
    for edit in edits:
        new = new.replace(*edit)
    found = [accepts_changed(a, b) for a, b in zip(parse_deck(DECK).cards,
                                                   parse_deck(new).cards, strict=True)]
    assert [f for f in found if f] == ([why] if why else [])


def test_a_choice_the_card_no_longer_has_shows_no_mistake():
    deck = parse_deck(DECK)
    move, shape = deck.cards
    assert mistakes_of(move, "gone") == [] and mistakes_of(move, "none") == ["in_place"]
    assert mistakes_of(shape, {"attr": "gone"}) == []
    assert mistakes_of(shape, {"gone": "dtype"}) == []
    assert mistakes_of(shape, {"attr": "dtype"}) == ["wrong_attribute"]


def test_a_code_option_card_is_as_long_in_every_option_order():
    """Options are shuffled per learner, and a card whose options are code shows one in
    full and each other as its diff against it: the one that makes the card shortest. Two
    long loops that differ in a line and a short one fit one embed in any order (with the
    short one shown in full, the long ones would not), so the upload is accepted; one
    long loop too many is refused in every order alike."""
    deck = load_deck(BUNDLED)
    index, card = next((i, c) for i, c in enumerate(deck.cards)
                       if getattr(c, "options", None) and any(o.code for o in c.options))
    long = "".join(f"value_{i} = {i}\n" for i in range(200))
    twin = long.replace("value_199 = 199", "value_199 = 0")
    key, *wrong = card.options

    def uploaded_with(options):
        return deck.model_copy(update={"cards": [
            *deck.cards[:index], card.model_copy(update={"options": options}),
            *deck.cards[index + 1:]]})

    options = [key.model_copy(update={"code": long}),
               wrong[0].model_copy(update={"code": twin}),
               wrong[1].model_copy(update={"code": "pass"})]
    lengths = {len(card_text(card, zip("ABC", order, strict=True)))
               for order in itertools.permutations(options)}
    assert len(lengths) == 1 and lengths.pop() <= 4096
    assert len(code_block(long)) + len(code_block(twin)) > 4096  # shown whole: clipped
    assert not [m for path, m in check_limits(uploaded_with(options))
                if path == ("cards", index, "prompt")]
    options[2] = wrong[1].model_copy(update={"code": long.replace("value_0 = 0", "")
                                             .replace("value_1 = 1", "v = 1")})
    too_long = uploaded_with([*options, options[0].model_copy(update={
        "id": "extra", "correct": False, "code": long[::-1]})])
    assert any(path == ("cards", index, "prompt") and "the card as shown" in message
               for path, message in check_limits(too_long))
