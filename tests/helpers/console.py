"""Reading what the terminal shows a learner: options are shuffled per serve, so a test
finds the letter of the option it means in the card last printed."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

from bot.terminal import Console
from tests.helpers.engines import engine_of

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


def typed(tutor, lines: list, learner_name: str = "sam", deck_id: str = "mini",
          **options) -> str:
    """What the terminal shows a learner who types `lines` (then Ctrl-D); a callable line is
    given what was printed so far (to find the letter an option is shown under).
    `options`: Console's (scheduler, remediation, topic)."""
    learner = tutor.learner(f"local:{learner_name}", display_name=learner_name)
    feed = iter(lines)
    out = io.StringIO()

    def read(prompt: str) -> str:
        out.write(prompt)
        try:
            line = next(feed)
        except StopIteration:
            raise EOFError from None
        line = line(out.getvalue()) if callable(line) else line
        out.write(line + "\n")
        return line

    assert Console(engine_of(tutor), learner, deck_id, out=out, read=read, **options).run() == 0
    return out.getvalue()
