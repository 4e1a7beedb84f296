"""The importer's placeholders: text a draft leaves for an editor to write.

A draft deck (content/importer.py) parses, so that an editor starts from a loadable file,
but its TODO texts are not a deck a learner may read ("TODO: write a hint" shown as a hint).
Uploads and `tutor deck validate` refuse any text a learner would read that still carries
one. Code (a starter, a reference, a card's or option's code) may say TODO in a comment: it
is the learner's to read as code, and the importer never writes a placeholder there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from content.schema import Deck

# Every placeholder the importer writes starts with TODO, but for one hint variant.
PLACEHOLDER_RE = re.compile(r"\bTODO\b|\(placeholder: to be written\)")
# Fields a learner does not read as prose, or that are curation notes for the editor.
NOT_PROSE = frozenset({"code", "starter", "reference", "given_names", "flags", "source",
                       "seed_wording"})


def is_placeholder(text: str) -> bool:
    return PLACEHOLDER_RE.search(text) is not None


def placeholder_problems(deck: Deck) -> list[tuple[tuple[Any, ...], str]]:
    """(YAML path, message) for every text a learner reads that is still a placeholder."""
    return [(path, f"{path[-1]} is a draft's placeholder ({_quote(text)}): write the real "
                   "text before the deck is played")
            for path, text in _texts(deck.model_dump(mode="json", exclude_defaults=True), ())
            if is_placeholder(text)]


def _texts(value, path: tuple) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in NOT_PROSE:
                yield from _texts(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _texts(item, (*path, index))


def _quote(text: str) -> str:
    line = text.strip().splitlines()[0]
    return f'"{line[:60]}…"' if len(line) > 60 else f'"{line}"'
