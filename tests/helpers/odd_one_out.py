"""How unlike the other choices of a question each choice is: the blind solver's `odd_one_out`.

A test-taker who knows nothing of the topic still sees form. When three options say
"Identical, since ..." and one says "Different, but only because ...", or three are slogans
and one describes a mechanism with code and a semicolon, the one that stands apart is a
guess that often pays. Distractors written as variations of one idea share words; a key
written in its own terms shares none. Both are measured here, with no knowledge of PyTorch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from content.giveaway_words import chip_kind, stem, stems  # noqa: F401 (stem: re-exported)

_TOKEN_RE = re.compile(r"[a-z0-9_']+")
NEGATIONS = frozenset("no not never nothing none without cannot can't doesn't don't isn't "
                      "won't neither nor".split())
HEDGES = frozenset("only but just merely except unless although though however".split())
ABSOLUTES = frozenset("only always never all none nothing every entirely completely must "
                      "cannot".split())
CAUSES = frozenset("because since so therefore as".split())
_CODE_RE = re.compile(r"\w\(|\w_\w|[=%<>]|\d")
_CLAUSES_RE = re.compile(r"[;:]")


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


def absolutes(text: str) -> int:
    """How many absolute or restricting words ("only", "never", "all") the text uses."""
    return sum(token in ABSOLUTES for token in _tokens(text))


def _lead(text: str) -> str:
    tokens = _tokens(text)
    return tokens[0] if tokens else ""


def _has(vocabulary: frozenset[str]) -> Callable[[str], bool]:
    return lambda text: any(token in vocabulary for token in _tokens(text))


# What a reader notices about an option's form, each a value compared across the choices.
FEATURES: dict[str, Callable[[str], object]] = {
    "lead": _lead,  # "Identical, ..." vs "Different, ..."
    "negation": _has(NEGATIONS),  # "No faster" among "Faster"s
    "hedge": _has(HEDGES),  # "but only because"
    "cause": _has(CAUSES),  # a reason given, or not
    "code": lambda text: bool(_CODE_RE.search(text)),  # names, calls, numbers: a mechanism
    "clauses": lambda text: bool(_CLAUSES_RE.search(text)),  # "X; Y" among one-clause options
    "kind": chip_kind,  # the one method among values, or the reverse
}


def alone_in(values: Sequence[object]) -> list[bool]:
    """Per choice: whether it alone differs while all the others agree (3+ choices)."""
    if len(values) < 3:
        return [False] * len(values)
    flags = []
    for i, value in enumerate(values):
        others = [v for j, v in enumerate(values) if j != i]
        flags.append(len(set(others)) == 1 and others[0] != value)
    return flags


def _overlap(mine: set[str], theirs: set[str]) -> float:
    union = mine | theirs
    return len(mine & theirs) / len(union) if union else 1.0


def oddness(texts: Sequence[str]) -> list[float]:
    """Per choice: how many form features it alone differs in, plus (below 1) how few word
    stems it shares with the other choices on average. Higher is odder."""
    scores = [0.0] * len(texts)
    for feature in FEATURES.values():
        for i, alone in enumerate(alone_in([feature(t) for t in texts])):
            scores[i] += alone
    words = [stems(t) for t in texts]
    for i, mine in enumerate(words):
        others = [_overlap(mine, w) for j, w in enumerate(words) if j != i]
        if others:
            scores[i] += 1 - sum(others) / len(others)
    # Rounded so that equal overlaps tie instead of differing in the last float bit.
    return [round(score, 6) for score in scores]
