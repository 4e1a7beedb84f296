"""What the give-away checks (`content.giveaways`) read a card with: its words (exact, and
as stems), the pragma that turns the checks off, and which chips can fill a blank at all
(a method or a value), by names and patterns, with no torch."""

from __future__ import annotations

import builtins
import re
from typing import Any

from content.schema import BLANK_RE, FillInCard

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
NUMBER_RE = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
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
    if NUMBER_RE.fullmatch(text):
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
