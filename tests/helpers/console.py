"""Reading what the terminal shows a learner: options are shuffled per serve, so a test
finds the letter of the option it means in the card last printed."""

from __future__ import annotations

import re
from collections.abc import Callable

# "  A) text" lines (an option each), or one line of chips: "  A) zero_grad   B) step".
_ITEM = re.compile(r"(?:^  |   )([A-Z])\) (.*?)(?=   [A-Z]\) |$)", re.M)


def shown_letters(output: str) -> dict[str, str]:
    """{text: letter} of the options or chips of the last card in `output`."""
    card = output.replace("\r", "").rsplit("\n== ", 1)[-1]
    return {text: letter for letter, text in _ITEM.findall(card)}


def letter_of(output: str, text: str) -> str:
    return shown_letters(output)[text]


def letters(*texts: str, sep: str = " ") -> Callable[[str], str]:
    """A line typed as the learner reads the card: the letters of `texts`, one per blank."""
    return lambda output: sep.join(letter_of(output, text) for text in texts)
