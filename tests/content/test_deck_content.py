"""The canonical gradient-accumulation deck: structure, coverage of the seed, curation fixes.

One file (over 400 lines) because each test pins one reviewed fix to one card of one deck:
split by topic, a reviewer would read the same deck in several places."""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import re

import pytest

from content import checkers
from content.loader import DECKS_DIR, load_deck
from content.schema import BLANK_RE, ChoiceCard, CodeCard, FillInCard
from tests.helpers.paths import REPO

DECK_PATH = DECKS_DIR / "gradient-accumulation.yaml"
# The seed page the deck was curated from, kept beside the deck it produced.
SEED_PAGE = REPO / "content" / "sources" / "gradient-accumulation.txt"

FILL_IN_IDS = ["zero-grad", "backward", "step-frequency", "scale-loss", "full-loop"]
CHOICE_IDS = ["purpose", "correct-loop", "printed-loss", "off-by-one", "lr-vs-loss-scaling"]
CODE_ID = "gradient-accumulation/train-loop"
# What the seed never taught, each on its own card (issue 14's list, most important first).
BEYOND_SEED_IDS = ["scheduler-steps", "scheduler-placement", "clip-placement", "amp-steps",
                   "unequal-micro-batches", "ddp-no-sync", "batchnorm", "not-faster"]
# Issue 24 point 8: token-weighted losses, the effective batch, frameworks, bf16.
BEYOND_SEED_IDS += ["token-loss-denominator", "padded-mean-over-k", "effective-batch",
                    "accelerate-contract", "deepspeed-contract", "bf16-no-scaler"]
# Issue 40 point 11: what engineers ship wrong beside accumulation.
BEYOND_SEED_IDS += ["ema-per-update", "window-loss-logging", "bf16-grad-accumulation",
                    "checkpointing-with-accumulation", "accelerate-scheduler-steps",
                    "fsdp-no-sync-memory"]
# Names the beyond-the-seed cards' code may use besides the code card's given names.
BEYOND_SEED_NAMES = {"scheduler", "max_norm", "scaler", "torch"}
GIVEN_NAMES = [
    "model", "optimizer", "criterion", "dataloader", "accumulation_steps",
    "batch_size", "learning_rate", "num_epochs", "device",
]
# Mistake ids the train_loop checker reports: its judge's own list, the one source.
CHECKER_MISTAKES = set(checkers.mistakes("train_loop"))


@pytest.fixture(scope="module")
def deck():
    return load_deck(DECK_PATH)


def _cards(deck, kind):
    return [card for card in deck.cards if isinstance(card, kind)]


def _leaks(hint: str, answer: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", hint, re.IGNORECASE) is not None


def _filled(card: FillInCard) -> str:
    chips = {chip.id: chip.text for chip in card.chips}
    answers = {blank.id: chips[blank.answer] for blank in card.blanks}
    return BLANK_RE.sub(lambda m: answers[m.group(1)], card.code)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


# --- seed page ------------------------------------------------------------------------------

def parse_seed_mistakes(text: str) -> list[str]:
    """Every 'Common Mistakes' line of the seed page, fill-in tasks and MCQs alike.

    Fill-in tasks: a 'Common Mistakes' line, then one line per mistake, then the task's
    explanation, then the next task header ('2fill in blank') or 'Practice'.
    MCQs: 'Common Mistakes:' followed by '•' bullets.
    """
    lines = [line.strip() for line in text.splitlines()]
    found: list[str] = []
    sections = 0
    i = 0
    while i < len(lines):
        if lines[i] == "Common Mistakes":
            sections += 1
            block = []
            i += 1
            while i < len(lines) and not re.fullmatch(r"\d+fill in blank|Practice", lines[i]):
                if lines[i]:
                    block.append(lines[i])
                i += 1
            found += block[:-1]  # the last line is the task's explanation
            continue
        if lines[i] == "Common Mistakes:":
            sections += 1
            i += 1
            while i < len(lines) and (not lines[i] or lines[i].startswith("•")):
                if lines[i]:
                    found.append(lines[i].lstrip("•").strip())
                i += 1
            continue
        i += 1
    assert sections == 10, f"expected 10 'Common Mistakes' sections in the seed, found {sections}"
    return found


@pytest.fixture(scope="module")
def seed_mistake_lines():
    return parse_seed_mistakes(SEED_PAGE.read_text(encoding="utf-8"))


# --- structure ------------------------------------------------------------------------------

def _from_seed(deck, kind):
    return [card for card in _cards(deck, kind) if card.source.startswith("seed")]


def test_canonical_deck_loads(deck):
    assert deck.id == "gradient-accumulation"
    assert len(deck.cards) >= 11 + len(BEYOND_SEED_IDS)


def test_card_types_and_ids(deck):
    assert [c.id for c in _from_seed(deck, FillInCard)] == [
        f"gradient-accumulation/{slug}" for slug in FILL_IN_IDS
    ]
    assert [c.id for c in _from_seed(deck, ChoiceCard)] == [
        f"gradient-accumulation/{slug}" for slug in CHOICE_IDS
    ]
    assert _cards(deck, CodeCard)[0].id == CODE_ID
    assert all(card.rev >= 1 and card.source for card in deck.cards)


def test_what_the_seed_never_taught_has_its_cards(deck):
    ids = {card.id for card in deck.cards}
    assert {f"gradient-accumulation/{slug}" for slug in BEYOND_SEED_IDS} <= ids
    assert all(deck.card(f"gradient-accumulation/{slug}").source.startswith("written for")
               for slug in BEYOND_SEED_IDS)


def test_blank_counts(deck):
    counts = {card.id.split("/")[1]: len(card.blanks) for card in _from_seed(deck, FillInCard)}
    assert counts == {"zero-grad": 1, "backward": 1, "step-frequency": 1,
                      "scale-loss": 2, "full-loop": 3}


def test_task5_offers_three_candidates_of_each_type_per_blank(deck):
    # The seed's three chips left one chip of the right type per blank (a give-away) and
    # made its own mistake, different variables for scaling and frequency, impossible; a
    # second setting named after the topic keeps `accumulation_steps` from standing out.
    card = deck.card("gradient-accumulation/full-loop")
    assert sorted(chip.text for chip in card.chips) == [
        "accumulation_samples", "accumulation_steps", "backward", "batch_size", "num_epochs",
        "step", "zero_grad"]
    window = next(blank for blank in card.blanks if blank.id == "window")
    assert window.wrong["batch_size"].mistake == "wrong_update_frequency"
    assert any("option C" in flag for flag in card.flags)


def test_option_and_chip_ids_are_not_letters(deck):
    for card in _cards(deck, ChoiceCard):
        assert all(len(option.id) > 1 for option in card.options), card.id
    for card in _cards(deck, FillInCard):
        assert all(len(chip.id) > 1 for chip in card.chips), card.id


# --- mistakes -------------------------------------------------------------------------------

def _references(deck) -> list[tuple[str, str]]:
    refs = []
    for card in deck.cards:
        if isinstance(card, FillInCard):
            refs += [(card.id, w.mistake) for b in card.blanks for w in b.wrong.values()]
        elif isinstance(card, ChoiceCard):
            refs += [(card.id, o.mistake) for o in card.options if not o.correct]
        else:
            refs += [(card.id, m) for m in card.mistakes]
    return refs


def test_every_referenced_mistake_exists(deck):
    known = {m.id for m in deck.mistakes}
    missing = [(card, m) for card, m in _references(deck) if m not in known]
    assert not missing


def test_every_mistake_is_used_and_explained(deck):
    used = {m for _, m in _references(deck)}
    for mistake in deck.mistakes:
        assert mistake.id in used, mistake.id
        assert mistake.title.strip() and len(mistake.explanation.split()) >= 15, mistake.id


def test_every_wrong_chip_is_explained(deck):
    for card in _cards(deck, FillInCard):
        chips = {chip.id for chip in card.chips}
        for blank in card.blanks:
            assert set(blank.wrong) == chips - {blank.answer}, (card.id, blank.id)
            for chip_id, choice in blank.wrong.items():
                assert choice.mistake and choice.says.strip(), (card.id, blank.id, chip_id)


def test_every_wrong_option_is_explained(deck):
    for card in _cards(deck, ChoiceCard):
        for option in card.options:
            if option.correct:
                assert option.mistake is None and option.says is None, (card.id, option.id)
            else:
                assert option.mistake and (option.says or "").strip(), (card.id, option.id)


def test_exactly_one_correct_option(deck):
    for card in _cards(deck, ChoiceCard):
        assert sum(option.correct for option in card.options) == 1, card.id


def test_checker_mistakes_are_registered_and_on_the_code_card(deck):
    known = {m.id for m in deck.mistakes}
    assert CHECKER_MISTAKES <= known
    card = deck.card(CODE_ID)
    assert set(card.mistakes) == CHECKER_MISTAKES
    assert len(card.mistakes) == len(set(card.mistakes))


def test_code_card_contract(deck):
    card = deck.card(CODE_ID)
    assert card.checker == "train_loop"
    assert card.given_names == GIVEN_NAMES
    assert all(name in card.starter for name in GIVEN_NAMES)
    assert "dataloader" in card.starter


def test_seed_mistake_parser_finds_every_line(seed_mistake_lines):
    assert len(seed_mistake_lines) == 26
    assert "Calling backward() on optimizer instead of loss" in seed_mistake_lines
    assert "Ignoring off-by-one in modulo condition" in seed_mistake_lines


# Seed mistakes no card teaches any more, each with why: a distractor no one picks teaches
# nothing and gives the key away (issue 24, point 6).
RETIRED_SEED_LINES = {
    "Assuming it alters model layers": "purpose rev 3: replaced by misconceptions people hold",
}


def test_every_seed_mistake_line_is_in_the_registry(deck, seed_mistake_lines):
    wording = {line for mistake in deck.mistakes for line in mistake.seed_wording}
    assert set(RETIRED_SEED_LINES) <= set(seed_mistake_lines)
    assert not set(RETIRED_SEED_LINES) & wording, "a retired line is back: drop it from the list"
    missing = [line for line in seed_mistake_lines
               if line not in wording and line not in RETIRED_SEED_LINES]
    assert not missing, f"seed 'Common Mistakes' lines in no mistake's seed_wording: {missing}"


def test_seed_wording_is_not_invented(deck, seed_mistake_lines):
    for mistake in deck.mistakes:
        for line in mistake.seed_wording:
            assert line in seed_mistake_lines, (mistake.id, line)


# --- hints, solutions -----------------------------------------------------------------------

def test_no_hint_gives_away_its_answer(deck):
    for card in _cards(deck, FillInCard):
        chips = {chip.id: chip.text for chip in card.chips}
        for blank in card.blanks:
            assert not _leaks(card.hint, chips[blank.answer]), (card.id, blank.id)
    for card in _cards(deck, ChoiceCard):
        correct = next(o for o in card.options if o.correct)
        assert not _leaks(card.hint, correct.text), card.id
        if correct.code:
            assert correct.code.strip() not in card.hint


def test_choice_cards_have_step_by_step_solutions(deck):
    for card in _cards(deck, ChoiceCard):
        assert len(card.solution) >= 2, card.id
        assert all(step.title and step.detail for step in card.solution)
        assert card.takeaway.strip()


def test_fill_in_cards_have_explanations(deck):
    for card in _cards(deck, FillInCard):
        assert card.explanation.strip() and card.takeaway.strip(), card.id


# --- code -----------------------------------------------------------------------------------

def _code_pieces(deck):
    for card in deck.cards:
        if isinstance(card, FillInCard):
            yield card.id, _filled(card)
        elif isinstance(card, ChoiceCard):
            if card.code:
                yield card.id, card.code
            for option in card.options:
                if option.code:
                    yield f"{card.id}:{option.id}", option.code
        else:
            yield f"{card.id}:starter", card.starter
            yield f"{card.id}:reference", card.reference


def test_all_code_compiles(deck):
    for where, code in _code_pieces(deck):
        compile(code, where, "exec")


def _free_names(code: str) -> set[str]:
    tree = ast.parse(code)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Load)}
    return loaded - stored - set(dir(builtins))


def test_runnable_code_uses_only_the_given_names(deck):
    allowed = set(GIVEN_NAMES)
    for card in _from_seed(deck, ChoiceCard):
        for where, code in [(card.id, card.code)] + [(o.id, o.code) for o in card.options]:
            if code:
                assert _free_names(code) <= allowed, (card.id, where, _free_names(code))
    assert _free_names(deck.card(CODE_ID).reference) <= allowed
    full_loop = deck.card("gradient-accumulation/full-loop")
    assert _free_names(_filled(full_loop)) <= allowed


def test_beyond_the_seed_code_uses_only_given_names_and_its_tools(deck):
    allowed = set(GIVEN_NAMES) | BEYOND_SEED_NAMES
    for slug in BEYOND_SEED_IDS:
        card = deck.card(f"gradient-accumulation/{slug}")
        for option in getattr(card, "options", []):  # a fill-in card has none
            if option.code:
                assert _free_names(option.code) <= allowed, (card.id, option.id)


def test_mcq2_options_all_scale_the_loss_and_use_accumulation_steps(deck):
    card = deck.card("gradient-accumulation/correct-loop")
    assert all(option.code for option in card.options)
    for option in card.options:
        assert "/ accumulation_steps" in option.code, option.id
        assert not re.search(r"%\s*4\b", option.code), option.id
        assert "for i, (inputs, labels) in enumerate(dataloader):" in option.code


def test_mcq2_modulo_precedence_fix_everywhere(deck):
    bad = re.compile(r"\(\s*i\s*\+\s*1\s*%")
    offenders = [s for s in _strings(deck.model_dump()) if bad.search(s)]
    assert not offenders
    assert not bad.search(DECK_PATH.read_text(encoding="utf-8"))  # comments included
    card = deck.card("gradient-accumulation/correct-loop")
    assert any("(i + 1) % accumulation_steps" in step.detail for step in card.solution)


def test_mcq4_snippet_is_scaled_so_only_the_off_by_one_is_wrong(deck):
    card = deck.card("gradient-accumulation/off-by-one")
    assert "/ accumulation_steps" in card.code
    assert "if i % accumulation_steps == 0:" in card.code
    assert [o.id for o in card.options if o.correct] == ["steps-at-first-batch"]
    wrong = {o.mistake for o in card.options if not o.correct}
    assert len(wrong) == 3 and "off_by_one_modulo" not in wrong


def test_task5_leftover_window_is_explained(deck):
    card = deck.card("gradient-accumulation/full-loop")
    assert "next epoch" in card.explanation
    assert any("next epoch" in flag for flag in card.flags)
    reference = deck.card(CODE_ID).reference
    assert "len(dataloader)" in reference and "range(num_epochs)" in reference


# --- behaviour (torch, when installed) --------------------------------------------------------

def _run(code: str, torch, *, num_batches: int = 10, accumulation_steps: int = 4, epochs=1):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    data = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(num_batches)]
    names = {
        "model": model,
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        "criterion": torch.nn.MSELoss(),
        "dataloader": data,
        "accumulation_steps": accumulation_steps,
        "batch_size": 2,
        "learning_rate": 0.1,
        "num_epochs": epochs,
        "device": "cpu",
    }
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<deck code>", "exec"), names)
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    return params, out.getvalue()


def test_mcq2_correct_option_matches_reference_and_wrong_ones_do_not(deck):
    torch = pytest.importorskip("torch")
    reference = deck.card(CODE_ID).reference
    expected, _ = _run(reference, torch)
    card = deck.card("gradient-accumulation/correct-loop")
    for option in card.options:
        got, _ = _run(option.code, torch)
        same = torch.allclose(got, expected, atol=1e-6)
        assert same == option.correct, option.id


def test_reference_handles_the_partial_last_window(deck):
    torch = pytest.importorskip("torch")
    reference = deck.card(CODE_ID).reference
    # Two epochs of 10 batches with windows of 4 must equal five windows per epoch
    # (4, 4, 2 batches), with nothing carried across the epoch boundary.
    got, _ = _run(reference, torch, epochs=2)
    manual = (
        "for epoch in range(num_epochs):\n"
        "    for start in range(0, len(dataloader), accumulation_steps):\n"
        "        optimizer.zero_grad()\n"
        "        for inputs, labels in dataloader[start:start + accumulation_steps]:\n"
        "            (criterion(model(inputs), labels) / accumulation_steps).backward()\n"
        "        optimizer.step()\n"
    )
    expected, _ = _run(manual, torch, epochs=2)
    assert torch.allclose(got, expected, atol=1e-6)
    # The seed's task-5 loop does not: run for two epochs, its last partial window of
    # epoch 1 leaks into the first window of epoch 2.
    seed_loop = _filled(deck.card("gradient-accumulation/full-loop"))
    two_epochs = "for epoch in range(num_epochs):\n" + "".join(
        "    " + line + "\n" for line in seed_loop.splitlines()
    )
    leaky, _ = _run(two_epochs, torch, epochs=2)
    assert not torch.allclose(leaky, got, atol=1e-6)


def test_mcq3_snippet_prints_the_scaled_loss_every_batch(deck):
    torch = pytest.importorskip("torch")
    code = deck.card("gradient-accumulation/printed-loss").code
    _, printed = _run(code, torch, num_batches=4, accumulation_steps=2)
    assert [line.split(":")[0] for line in printed.splitlines()] == [
        "Batch 1 loss", "Batch 2 loss", "Batch 3 loss", "Batch 4 loss"
    ]


def test_mcq4_snippet_differs_from_reference(deck):
    torch = pytest.importorskip("torch")
    buggy, _ = _run(deck.card("gradient-accumulation/off-by-one").code, torch)
    right, _ = _run(deck.card(CODE_ID).reference, torch)
    assert not torch.allclose(buggy, right, atol=1e-6)
