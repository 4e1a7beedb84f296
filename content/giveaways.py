"""Lint: answers a card gives away to a learner who knows nothing about the topic.

Four checks, each reported like the rest of `content.lint` as (YAML path, message):

a. `restates`: the correct option's text restates the card's prompt or takeaway.
b. `longest`: across the deck, the correct option is the strictly longest option of too
   many multiple-choice cards (test-takers learn "pick the longest").
c. `hint`: the hint contains words that only the key has (none of its wrong choices).
d. `slot type`: only one chip of a fill-in card can fill a blank at all: the code asks
   for a method (`loss.[[m]]()`) or a value (`loss / [[v]]`) and just one chip is one.
e. `one value`: across the deck, one chip text answers every value blank (3 or more): a
   learner who always picks `accumulation_steps` is never wrong.
f. `key length`: two-sided. Across the deck the keys of the text multiple-choice cards
   are neither mostly the shortest option (the mirror of b) nor, on average, placed
   towards either end of the length order (their mean length rank is within 1.96
   standard errors of the middle): "never pick the longest" is a trick too.
g. `topic word`: across the deck, the chip named after the deck's title (a word of the
   title as a whole word of the chip, or, in a second pass, as a word stem) answers more
   than half of the blanks where such a chip stands among others of the slot's kind.
h. `fewest edits`: in a card whose options are code, the key is the one option with the
   fewest line edits to all the others (each wrong loop is the key with one call moved).
i. `fresh number`: the key is the only number chip not copied from the card's prompt or
   code (the others are the prompt's numbers, the answer is computed from them).
j. `unused name`: the key is the only chip naming a variable the snippet defines and
   never uses (apart from the blank).

Words are compared exactly (lower-cased, no stemming), so "steps" is not "step", in
keeping with the hint rule of `content.lint`; only g also compares stems. Everything here
is deterministic and needs no torch: the method names a chip may be are listed below.
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from content.schema import BLANK_RE, ChoiceCard, Deck, FillInCard

Path = tuple[Any, ...]
Problem = tuple[Path, str]

# A file carrying this comment line is loaded without the give-away checks: importer
# drafts (unfinished by design) and engine-test fixtures. Bundled decks must not have it.
ALLOW_PRAGMA = "# tutor-lint: allow-giveaways"
_PRAGMA_RE = re.compile(r"^#\s*tutor-lint:\s*allow-giveaways\b", re.MULTILINE)

STOP_WORDS = frozenset("""
a an the and or but nor not no so as if then than that this these those
to of in on at by for with from into onto over under up out off about
is are was were be been being am do does did done has have had having
it its it's he she they them their there here we you your our i me my
will would can could should shall may might must
which what who whom whose when where why how
each every all any some only just also very too more most less
one ones per via
""".split())

_WORD_RE = re.compile(r"[a-z0-9_]+")


def words(text: str | None) -> set[str]:
    """Distinctive words: lower-cased word tokens, minus stop words and lone letters.

    An identifier stays one word (`zero_grad`, `accumulation_steps`); `micro-batch` and
    `backward()` give `micro`, `batch` and `backward`.
    """
    tokens = _WORD_RE.findall((text or "").lower())
    return {t for t in tokens if t not in STOP_WORDS and (len(t) > 1 or t.isdigit())}


def words_with_parts(text: str | None) -> set[str]:
    """`words`, plus the parts of each identifier (`zero_grad` also gives `zero`, `grad`).

    A test-taker sees "accumulation" in `accumulation_steps`; the blind solver does too.
    """
    found = words(text)
    for word in list(found):
        found |= words(word.replace("_", " "))
    return found


# Suffixes stripped so that "accumulate", "accumulated" and "accumulation" meet, and
# "gradients" meets "gradient". Longest first; one strip per word.
_SUFFIXES = ("ations", "ation", "ating", "ated", "ates", "ate", "ings", "ing", "ed", "es",
             "s", "e")
_MIN_STEM = 4


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def stems(text: str | None) -> set[str]:
    """The stems of `words_with_parts`: identifier parts included, suffixes stripped."""
    return {stem(word) for word in words_with_parts(text)}


def spells_out(hint: str, answer: str) -> bool:
    """True when the hint spells out the answer as a whole word or phrase, in any case.

    A preceding dot still counts: "call optimizer.zero_grad()" gives away `zero_grad`.
    (`content.lint` reports this; the hint check here then stays silent.)
    """
    pattern = rf"(?<!\w){re.escape(answer)}(?!\w)"
    return re.search(pattern, hint, flags=re.IGNORECASE) is not None


def allows_giveaways(text: str) -> bool:
    """True when the deck file opts out of the give-away checks with `ALLOW_PRAGMA`."""
    return _PRAGMA_RE.search(text) is not None


# --- slot and chip types ----------------------------------------------------------------------

# Callable names of torch.Tensor, torch.optim.Optimizer, torch.nn.Module, LR schedulers,
# GradScaler and common torch / torch.nn.functional / torch.nn.utils functions. A chip whose
# text is one of these (or a Python builtin function) is a method; any other identifier or
# literal is a value (a variable, a setting, a number).
TENSOR_METHODS = frozenset("""
abs add add_ addmm all any argmax argmin argsort backward bmm bool byte ceil char chunk
clamp clamp_ clip clone contiguous copy_ cpu cuda cumsum detach detach_ dim div div_
double dot eq exp expand expand_as fill_ flatten flip float floor gather ge gt half
index_select int isnan item le log log_softmax long lt masked_fill masked_fill_ matmul
max mean min mm mul mul_ ne neg norm normal_ numel numpy permute pow prod reciprocal
register_hook relu repeat requires_grad_ reshape retain_grad round rsqrt scatter sigmoid
sign size softmax sort split sqrt square squeeze std sub sub_ sum t tanh to tolist topk
transpose type type_as unbind uniform_ unsqueeze var view view_as where zero_
""".split())
OPTIMIZER_METHODS = frozenset(
    "add_param_group load_state_dict state_dict step zero_grad".split())
MODULE_METHODS = frozenset("""
add_module apply buffers children cpu cuda double eval float forward half
load_state_dict modules named_buffers named_children named_modules named_parameters
parameters register_buffer register_forward_hook register_forward_pre_hook
register_full_backward_hook register_parameter requires_grad_ state_dict to train
zero_grad
""".split())
SCHEDULER_AND_SCALER_METHODS = frozenset(
    "get_last_lr get_scale scale step unscale_ update".split())
TORCH_FUNCTIONS = frozenset("""
arange autocast cat clip_grad_norm_ clip_grad_value_ compile cross_entropy einsum
empty enable_grad from_numpy full inference_mode linspace load manual_seed mse_loss
nll_loss no_grad ones ones_like rand randint randn save stack tensor zeros zeros_like
""".split())
_BUILTIN_FUNCTIONS = frozenset(
    name for name in dir(builtins)
    if name.islower() and not name.startswith("_") and callable(getattr(builtins, name))
)
METHOD_NAMES = (TENSOR_METHODS | OPTIMIZER_METHODS | MODULE_METHODS
                | SCHEDULER_AND_SCALER_METHODS | TORCH_FUNCTIONS | _BUILTIN_FUNCTIONS)

_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_NUMBER_RE = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
# What may come right before a blank that must be a value (an operand or an argument).
_VALUE_BEFORE = ("/", "%", "*", "+", "-", "=", "(", ",", "[", "<", ">", ":", "&", "|", "^",
                 "~", "**", "//")
_VALUE_KEYWORDS = ("return", "in", "if", "elif", "while", "not", "and", "or", "yield")


def slot_kind(code: str, marker: str) -> str | None:
    """What the blank `[[marker]]` of `code` must be: 'method', 'value', or None (unsure).

    `.` before and `(` after: a method (`loss.[[m]]()`). After an operator, `(`, `,`, `=`
    or a keyword such as `return`, and not called: a value (`loss / [[v]]`, `f([[v]])`).
    """
    match = re.search(rf"\[\[{re.escape(marker)}\]\]", code)
    if not match:
        return None
    before = BLANK_RE.sub("x", code[:match.start()]).rstrip()
    after = code[match.end():].lstrip(" \t")
    called = after.startswith("(")
    if before.endswith(".") and called:
        return "method"
    if called or before.endswith("."):
        return None  # a bare call or an attribute: either kind could fit
    last_word = re.search(r"(\w+)$", before)
    if before.endswith(_VALUE_BEFORE) or (last_word and last_word.group(1) in _VALUE_KEYWORDS):
        return "value"
    return None


def chip_kind(text: str) -> str | None:
    """'method' for a known method or function name, 'value' for any other identifier or a
    number, None for anything else (an expression fits either kind of blank)."""
    text = text.strip()
    if _NUMBER_RE.fullmatch(text):
        return "value"
    if _IDENT_RE.fullmatch(text):
        return "method" if text in METHOD_NAMES else "value"
    return None


def fitting_chips(card: FillInCard, marker: str) -> list[str] | None:
    """Ids of the card's chips that can fill the blank, or None when the slot is unsure."""
    kind = slot_kind(card.code, marker)
    if kind is None:
        return None
    return [chip.id for chip in card.chips if chip_kind(chip.text) in (kind, None)]


# --- the checks -------------------------------------------------------------------------------

# (a) The correct option restates the prompt or takeaway when at least 60% of its
# distinctive words, and at least 3 of them, appear there. Three words keep short keys
# ("To save memory") from tripping on one topical word; 60% means most of what the option
# says is borrowed. Ordinary keys of this kind share one or two topic words (loss, batch).
RESTATE_SHARE = 0.6
RESTATE_MIN_WORDS = 3
# (b) Chance puts the key strictly longest in at most 1 of 3 cards with 3+ options. More
# than half of them, and at least 3 cards (below that a streak is common: two 3-option
# cards are both "longest" once in 9 decks), is more than chance explains.
LONGEST_MIN_OPTIONS = 3
LONGEST_MIN_CARDS = 3
# (c) One shared word in a long option can be the topic ("batch" in a batching deck); two
# distinctive words of the key, or half of a short key (a chip, "save memory"), point at it.
HINT_MIN_WORDS = 2
# (e) Two value blanks with the same answer are common (a divisor and a window of one loop);
# from three on, one chip answering all of them is a rule a learner can learn instead.
ONE_VALUE_MIN_BLANKS = 3


def check_giveaways(deck: Deck) -> list[Problem]:
    return list(_giveaway_problems(deck))


def _giveaway_problems(deck: Deck) -> Iterator[Problem]:
    for index, card in enumerate(deck.cards):
        base: Path = ("cards", index)
        if isinstance(card, ChoiceCard):
            yield from _restates(card, base)
            yield from _choice_hint(card, base)
            yield from _fewest_edits(card, base)
        elif isinstance(card, FillInCard):
            yield from _fill_in_hint(card, base)
            yield from _slot_types(card, base)
            yield from _fresh_number(card, base)
            yield from _unused_name(card, base)
    yield from _longest_keys(deck)
    yield from _shortest_keys(deck)
    yield from _key_length_rank(deck)
    yield from _one_value_answer(deck)
    yield from _topic_word(deck)


def _listed(items: Iterable[str]) -> str:
    return ", ".join(f"'{item}'" for item in sorted(items))


def _correct(card: ChoiceCard) -> list[tuple[int, Any]]:
    return [(i, option) for i, option in enumerate(card.options) if option.correct]


def _restates(card: ChoiceCard, base: Path) -> Iterator[Problem]:
    for index, option in _correct(card):
        mine = words(option.text)
        for field in ("prompt", "takeaway"):
            shared = mine & words(getattr(card, field))
            if len(shared) >= RESTATE_MIN_WORDS and len(shared) >= RESTATE_SHARE * len(mine):
                yield (*base, "options", index, "text"), (
                    f"the correct option restates the {field}: {len(shared)} of its "
                    f"{len(mine)} distinctive words ({_listed(shared)}) are in the {field}; "
                    "word it in its own terms")


def _key_words_in_hint(key: str, others: set[str], hint: str) -> set[str] | None:
    """The key's own words found in the hint, when they are enough to point at the key
    (and the hint does not spell out the whole key, which `content.lint` reports)."""
    if spells_out(hint, key):
        return None
    own = words(key) - others
    shared = own & words(hint)
    if shared and len(shared) >= min(HINT_MIN_WORDS, math.ceil(len(own) / 2)):
        return shared
    return None


def _choice_hint(card: ChoiceCard, base: Path) -> Iterator[Problem]:
    for _, option in _correct(card):
        others = set().union(*(words(o.text) for o in card.options if not o.correct))
        shared = _key_words_in_hint(option.text, others, card.hint)
        if shared:
            yield (*base, "hint"), (
                f"hint points at the correct option: it uses {_listed(shared)}, which only "
                "the correct option says")


def _fill_in_hint(card: FillInCard, base: Path) -> Iterator[Problem]:
    chips = {chip.id: chip.text for chip in card.chips}
    for blank in card.blanks:
        if blank.answer not in chips:
            continue  # content.lint reports it
        others = set().union(*(words(t) for c, t in chips.items() if c != blank.answer))
        shared = _key_words_in_hint(chips[blank.answer], others, card.hint)
        if shared:
            yield (*base, "hint"), (
                f"hint points at the answer of blank '{blank.id}': it uses {_listed(shared)}, "
                f"which only the chip '{chips[blank.answer]}' has")


def _slot_types(card: FillInCard, base: Path) -> Iterator[Problem]:
    chips = {chip.id: chip.text for chip in card.chips}
    for index, blank in enumerate(card.blanks):
        fits = fitting_chips(card, blank.id)
        # Judged only when the answer is a plain name or number: an expression chip could
        # be read as either kind.
        if fits != [blank.answer] or chip_kind(chips[blank.answer]) is None:
            continue
        kind = slot_kind(card.code, blank.id)
        misfits = [chips[c] for c in chips if c != blank.answer]
        plural = len(misfits) > 1
        other = ("method names" if plural else "a method name") if kind == "value" else (
            "not methods" if plural else "not a method")
        yield (*base, "blanks", index), (
            f"blank '{blank.id}' needs a {kind} and only the chip '{chips[blank.answer]}' is "
            f"one ({_listed(misfits)} {'are' if plural else 'is'} {other}), so the code alone "
            f"gives the answer away; add a wrong chip that is a plausible {kind}")


def _option_length(option: Any) -> int:
    return len(" ".join(option.text.split()))


def longest_key(card: ChoiceCard) -> bool:
    """True when the correct option is strictly longer than every other option."""
    keys = [o for o in card.options if o.correct]
    if len(keys) != 1:
        return False
    longest = max(_option_length(o) for o in card.options if not o.correct)
    return _option_length(keys[0]) > longest


def _longest_keys(deck: Deck) -> Iterator[Problem]:
    counted = [(i, card) for i, card in enumerate(deck.cards)
               if isinstance(card, ChoiceCard) and len(card.options) >= LONGEST_MIN_OPTIONS]
    offenders = [(i, card) for i, card in counted if longest_key(card)]
    if len(offenders) < LONGEST_MIN_CARDS or 2 * len(offenders) <= len(counted):
        return
    for index, card in offenders:
        key = next(i for i, o in enumerate(card.options) if o.correct)
        yield ("cards", index, "options", key, "text"), (
            f"the correct option is the longest one here, as in {len(offenders)} of the "
            f"deck's {len(counted)} multiple-choice cards with {LONGEST_MIN_OPTIONS}+ options: "
            "'pick the longest' beats chance; shorten it or lengthen a wrong option")


def _value_blanks(deck: Deck) -> Iterator[tuple[Path, str]]:
    """(path, answer chip text) of every blank the code says needs a value."""
    for index, card in enumerate(deck.cards):
        if not isinstance(card, FillInCard):
            continue
        chips = {chip.id: chip.text.strip() for chip in card.chips}
        for b, blank in enumerate(card.blanks):
            if blank.answer in chips and slot_kind(card.code, blank.id) == "value":
                yield ("cards", index, "blanks", b), chips[blank.answer]


def _one_value_answer(deck: Deck) -> Iterator[Problem]:
    blanks = list(_value_blanks(deck))
    answers = {answer for _, answer in blanks}
    if len(blanks) < ONE_VALUE_MIN_BLANKS or len(answers) != 1:
        return
    [answer] = answers
    for path, _ in blanks:
        yield path, (
            f"the chip '{answer}' answers every value blank of the deck ({len(blanks)} of "
            f"{len(blanks)}): a learner who always picks it is never wrong; give some value "
            "blank another answer")


# --- f. key length, both sides -----------------------------------------------------------------

# A rank test needs a few cards: below this many, any order is common by chance.
RANK_MIN_CARDS = 6
# Two-sided, as the FSRS gate: 1.96 standard errors leave a fair deck flagged 1 time in 20
# at most, and only one whose keys really lean to one end is flagged often.
RANK_Z = 1.96


def _text_choices(deck: Deck) -> list[tuple[int, ChoiceCard]]:
    """(index, card) of the multiple-choice cards whose options are told apart by text."""
    return [(i, card) for i, card in enumerate(deck.cards)
            if isinstance(card, ChoiceCard) and len(card.options) >= LONGEST_MIN_OPTIONS
            and sum(o.correct for o in card.options) == 1
            and not any(o.code for o in card.options)]


def shortest_key(card: ChoiceCard) -> bool:
    """True when the correct option is strictly shorter than every other option."""
    keys = [o for o in card.options if o.correct]
    if len(keys) != 1:
        return False
    shortest = min(_option_length(o) for o in card.options if not o.correct)
    return _option_length(keys[0]) < shortest


def key_length_rank(card: ChoiceCard) -> float:
    """Where the key's length falls among the options': 0 the shortest, 1 the longest, ties
    at their middle rank (so a key as long as every other option is 0.5)."""
    key = next(o for o in card.options if o.correct)
    mine = _option_length(key)
    others = [_option_length(o) for o in card.options if not o.correct]
    below = sum(length < mine for length in others)
    tied = sum(length == mine for length in others)
    return (below + tied / 2) / len(others)


def _rank_variance(n: int) -> float:
    """The variance of `key_length_rank` for a key placed at random among n distinct
    lengths: a uniform rank over 0, 1/(n-1), ..., 1."""
    return (n + 1) / (12 * (n - 1))


def _shortest_keys(deck: Deck) -> Iterator[Problem]:
    counted = _text_choices(deck)
    offenders = [(i, card) for i, card in counted if shortest_key(card)]
    if len(offenders) < LONGEST_MIN_CARDS or 2 * len(offenders) <= len(counted):
        return
    for index, card in offenders:
        key = next(i for i, o in enumerate(card.options) if o.correct)
        yield ("cards", index, "options", key, "text"), (
            f"the correct option is the shortest one here, as in {len(offenders)} of the "
            f"deck's {len(counted)} text multiple-choice cards: 'pick the shortest' beats "
            "chance; lengthen it or shorten a wrong option")


def _key_length_rank(deck: Deck) -> Iterator[Problem]:
    counted = _text_choices(deck)
    if len(counted) < RANK_MIN_CARDS:
        return
    ranks = [key_length_rank(card) for _, card in counted]
    mean = sum(ranks) / len(ranks)
    error = math.sqrt(sum(_rank_variance(len(card.options)) for _, card in counted)) / len(
        counted)
    if abs(mean - 0.5) <= RANK_Z * error:
        return
    side = "short" if mean < 0.5 else "long"
    for (index, card), rank in zip(counted, ranks, strict=True):
        if (rank < 0.5) if side == "short" else (rank > 0.5):
            key = next(i for i, o in enumerate(card.options) if o.correct)
            yield ("cards", index, "options", key, "text"), (
                f"the keys of the deck's text multiple-choice cards lean to the {side} end: "
                f"their mean length rank is {mean:.2f} (0 shortest, 1 longest; by chance "
                f"0.5 +/- {RANK_Z * error:.2f}), so 'pick the {side}er ones' beats chance; "
                f"this key is {side}er than most of its options")


# --- g. the chip named after the topic ----------------------------------------------------------

# More than half of the blanks with a chip named after the topic: the name is the answer
# more often than chance (at most one in two: such a chip stands among one other at least).
TOPIC_MIN_BLANKS = 3
TOPIC_SHARE = 0.5


def topic_words(deck: Deck) -> set[str]:
    """The distinctive words of the deck's title ("gradient", "accumulation", "pytorch")."""
    return words(deck.title)


def named_after(texts: Iterable[str], topic: set[str], *, stemmed: bool) -> list[bool]:
    """Per text: whether it has a word of `topic` as a whole word (identifier parts count:
    `accumulation_steps` has "accumulation"), or with `stemmed`, a stem of one
    (`accumulated_samples` then meets "accumulation")."""
    if stemmed:
        wanted = {stem(word) for word in topic}
        return [bool(stems(text) & wanted) for text in texts]
    return [bool(words_with_parts(text) & topic) for text in texts]


def _blank_choices(deck: Deck) -> Iterator[tuple[Path, FillInCard, list[str], int]]:
    """(path, card, chip texts, index of the answer chip) of every blank, the chips limited
    to those whose kind fits the slot (a learner rules out a method where a value goes)."""
    for index, card in enumerate(deck.cards):
        if not isinstance(card, FillInCard):
            continue
        for b, blank in enumerate(card.blanks):
            fits = fitting_chips(card, blank.id)
            chips = [c for c in card.chips if fits is None or not fits or c.id in fits]
            ids = [chip.id for chip in chips]
            if blank.answer in ids:
                yield (("cards", index, "blanks", b), card, [c.text for c in chips],
                       ids.index(blank.answer))


def _topic_word(deck: Deck) -> Iterator[Problem]:
    topic = topic_words(deck)
    for stemmed in (False, True):
        scored = []
        for path, _, texts, key in _blank_choices(deck):
            named = named_after(texts, topic, stemmed=stemmed)
            if any(named) and not all(named):
                scored.append((path, texts[key], named[key] / sum(named)))
        if len(scored) < TOPIC_MIN_BLANKS:
            continue
        accuracy = sum(score for _, _, score in scored) / len(scored)
        if accuracy <= TOPIC_SHARE:
            continue
        how = "a stem of" if stemmed else "a word of"
        for path, answer, score in scored:
            if score:
                yield path, (
                    f"the chip '{answer}' has {how} the deck's title, and picking such a chip "
                    f"answers {accuracy:.0%} of the {len(scored)} blanks that offer one: give "
                    "a blank another answer or add a wrong chip named after the topic")
        return  # the stems would report the same blanks again


# --- h. the key with the fewest line edits to the others ----------------------------------------

def _code_lines(code: str) -> list[str]:
    return [line.rstrip() for line in code.strip("\n").splitlines() if line.strip()]


def line_edits(a: str, b: str) -> int:
    """Lines inserted, deleted or replaced to turn code `a` into code `b` (Levenshtein over
    lines, trailing spaces and blank lines ignored): a moved call costs 2."""
    x, y = _code_lines(a), _code_lines(b)
    previous = list(range(len(y) + 1))
    for i, line in enumerate(x, 1):
        current = [i]
        for j, other in enumerate(y, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (line != other)))
        previous = current
    return previous[-1]


def edit_totals(texts: list[str]) -> list[int]:
    """Per choice: its line edits to all the other choices (the medoid has the fewest)."""
    return [sum(line_edits(t, u) for u in texts) for t in texts]


def _fewest_edits(card: ChoiceCard, base: Path) -> Iterator[Problem]:
    options = card.options
    if len(options) < 3 or not all(o.code for o in options):
        return
    keys = [i for i, o in enumerate(options) if o.correct]
    if len(keys) != 1:
        return
    totals = edit_totals([o.code or "" for o in options])
    [key] = keys
    if all(totals[key] < t for i, t in enumerate(totals) if i != key):
        yield (*base, "options", key, "code"), (
            f"the correct loop is the one with the fewest line edits to all the others "
            f"({totals[key]} against {min(t for i, t in enumerate(totals) if i != key)} at "
            "best): each wrong one is the key with one change, so the centre is the key; "
            "make the wrong loops differ from each other as much as from the key")


# --- i. the only number not copied from the prompt ----------------------------------------------

def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    if not _NUMBER_RE.fullmatch(text):
        return None
    return float(text)


def numbers_in(text: str | None) -> set[float]:
    """The numbers a text states (1,000 and 1000 alike)."""
    found = set()
    for match in re.finditer(r"(?<![\w.])\d[\d,]*(\.\d+)?", text or ""):
        value = _number(match.group(0).rstrip(","))
        if value is not None:
            found.add(value)
    return found


def fresh_numbers(card: FillInCard) -> list[bool]:
    """Per chip: whether it is a number the prompt and code do not state."""
    stated = numbers_in(card.prompt) | numbers_in(BLANK_RE.sub(" ", card.code))
    flags = []
    for chip in card.chips:
        value = _number(chip.text)
        flags.append(value is not None and value not in stated)
    return flags


def _fresh_number(card: FillInCard, base: Path) -> Iterator[Problem]:
    numeric = [_number(chip.text) is not None for chip in card.chips]
    if sum(numeric) < 3:
        return
    fresh = fresh_numbers(card)
    ids = [chip.id for chip in card.chips]
    for index, blank in enumerate(card.blanks):
        if blank.answer in ids and sum(fresh) == 1 and fresh[ids.index(blank.answer)]:
            yield (*base, "blanks", index), (
                f"the answer of blank '{blank.id}' is the only number chip the prompt does "
                "not state: the others are copied from it, so 'pick the new number' finds it; "
                "add a wrong chip computed from the prompt's numbers the wrong way")


# --- j. the only variable defined and never used --------------------------------------------------

_BLANK_NAME = "_tutor_blank_"


def unused_names(card: FillInCard) -> list[bool]:
    """Per chip: whether it names a variable the code assigns and never reads, the blanks
    left out (a code that does not parse: none)."""
    try:
        tree = ast.parse(BLANK_RE.sub(_BLANK_NAME, card.code))
    except SyntaxError:
        return [False] * len(card.chips)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Load)}
    # `total += x` reads total as well: a running sum is used.
    loaded |= {n.target.id for n in ast.walk(tree) if isinstance(n, ast.AugAssign)
               and isinstance(n.target, ast.Name)}
    return [chip.text.strip() in stored - loaded for chip in card.chips]


def _unused_name(card: FillInCard, base: Path) -> Iterator[Problem]:
    unused = unused_names(card)
    ids = [chip.id for chip in card.chips]
    for index, blank in enumerate(card.blanks):
        if blank.answer in ids and sum(unused) == 1 and unused[ids.index(blank.answer)]:
            yield (*base, "blanks", index), (
                f"the answer of blank '{blank.id}' is the only chip naming a variable the "
                "code defines and never uses: 'pick the unused one' finds it; use it "
                "elsewhere too, or define a wrong chip's variable that is also left unused")
