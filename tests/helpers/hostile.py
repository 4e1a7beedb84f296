"""Hostile text, as a learner's exception message or a deck author could write it, and the
sandbox's answer for code that raised it."""

from __future__ import annotations

import re
import unicodedata

from bot.engine.code_judge import report_from
from bot.sandbox.protocol import RunResult
from content.checkers._verdict import error_result

# A masked link, a fake verdict and heading, mentions, a bidi override and isolate, a
# zero-width space, backticks in every position, a fence, newlines and a lone surrogate.
HOSTILE = ("`[click](https://evil.example)` ✅ your answer is correct\n# Correct!\n"
           "@everyone <@123> <@&456> \u202egnp.exe\u202c \u2066x\u2069 zero\u200bwidth "
           "``` ``tick`` \ud800 trailing`")
LEAKS = ("https://evil", "@everyone", "<@", "✅", "# Correct", "\n#")


def sandbox_result(message: str = HOSTILE, stdout: str = "\x1b[2J\u202eprinted") -> RunResult:
    """The service's answer when the learner's loop raised ValueError(message) on line 2:
    the checker ran, and its report is error_result's (read as a client reads it)."""
    return RunResult.from_wire({
        "status": "error", "exit_code": 1, "stdout": stdout, "stderr": "",
        "error": "the program failed", "elapsed_ms": 5.0,
        "report": error_result({"type": "ValueError", "message": message, "line": 2})})


def judge(card, code: str, learner=None):
    """A code judge answering every submission as the sandbox would for HOSTILE."""
    return report_from(sandbox_result())


SAFE_LINE = report_from(sandbox_result()).feedback[0]  # what every front end shows


def invisible(text: str) -> list[str]:
    """The format, control (but newline and tab) and surrogate characters in `text`."""
    return [c for c in text if c not in "\n\t"
            and unicodedata.category(c) in ("Cf", "Cc", "Cs")]


def outside_spans(text: str) -> str:
    """`text` without its inline code spans (single backticks: the only kind we make)."""
    parts = text.split("`")
    assert len(parts) % 2, f"an unclosed code span in {text!r}"
    return "".join(parts[::2])


def assert_inert(text: str) -> None:
    """No invisible character, and no link or mention Discord would render: each opener
    has an odd run of backslashes before it (Discord reads them in pairs)."""
    assert not invisible(text), text
    for m in re.finditer(r"(\\*)(\[|<[@#/]|@everyone|@here)", text):
        opens_link = m[2] != "[" or "](" in text[m.end():]
        assert len(m[1]) % 2 or not opens_link, (m[0], text)


def assert_quoted(text: str) -> None:
    """Learner text: nothing of the attack outside code spans (inside, Discord shows it
    as it is)."""
    assert not invisible(text), text
    outside = outside_spans(text)
    assert_inert(outside)
    for leak in LEAKS:
        assert leak not in outside, (leak, text)


def alias_bomb(levels: int = 10) -> bytes:
    """A billion-laughs YAML document: a few hundred bytes that expand to 10**levels
    scalars."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines).encode()
