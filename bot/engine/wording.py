"""Counts in words, for every front end: "1 card", "2 cards", never "card(s)"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the form that number takes; ``plural`` where adding an s is
    wrong ("1 entry", "2 entries"). Thousands are grouped."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
