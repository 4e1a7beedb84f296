"""Counts in words, for every front end: "1 card", "2 cards", never "card(s)"."""

from __future__ import annotations

import re

from content.safe_text import plain

__all__ = ["card_label", "counted", "topic_name"]

# Code spans and bold: marks a label shows literally. Underscores stay: names hold them.
_MARKS = re.compile(r"`+|\*\*|~~")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the form that number takes; ``plural`` where adding an s is
    wrong ("1 entry", "2 entries"). Thousands are grouped."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def card_label(prompt: str, limit: int = 60) -> str:
    """A card named for a learner: the first line of its prompt, without markdown marks,
    cut at a word to at most ``limit`` characters (ids stay the values behind it)."""
    first = next((line for line in plain(prompt).split("\n") if line.strip()), "")
    text = " ".join(_MARKS.sub("", first).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(",;:") + "…"


def topic_name(topic: str) -> str:
    """A topic as words ("optimizer basics"); its slug stays the value commands take."""
    return topic.replace("-", " ").replace("_", " ")
