"""What a new version of a card changes for the learners who have it in play.

A card's `content_rev` says when what it asks or accepts last changed: learners who
reviewed an older content start over, and a card served before it cannot be answered any
more (`Tutor.card`). A version that keeps content_rev keeps cards in play answerable, so it
may not take away what a learner may already have chosen, nor change what is right.
"""

from __future__ import annotations

from content.loader import AnyCard
from content.schema import ChoiceCard, CodeCard, FillInCard


def accepts_changed(old: AnyCard, new: AnyCard) -> str | None:
    """Why `new` accepts other answers than `old` (None when it does not): a typo fix may
    add a choice, or reword any text, but not remove a choice or a blank, move the key, or
    judge code by another checker."""
    if type(old) is not type(new):
        return f"it is now a {new.type} card, not a {old.type} card"
    if isinstance(old, ChoiceCard):
        gone = [o.id for o in old.options if o.id not in {n.id for n in new.options}]
        if gone:
            return f"option(s) {', '.join(gone)} were removed"
        key = next(o.id for o in old.options if o.correct)
        if not next(o for o in new.options if o.id == key).correct:
            return f"the correct option is no longer '{key}'"
    elif isinstance(old, FillInCard):
        gone = [c.id for c in old.chips if c.id not in {n.id for n in new.chips}]
        if gone:
            return f"chip(s) {', '.join(gone)} were removed"
        answers = {b.id: b.answer for b in new.blanks}
        if set(answers) != {b.id for b in old.blanks}:
            return "its blanks changed"
        moved = [b.id for b in old.blanks if answers[b.id] != b.answer]
        if moved:
            return f"the answer of blank(s) {', '.join(moved)} changed"
    elif isinstance(old, CodeCard) and old.checker != new.checker:
        return f"its checker is now '{new.checker}', not '{old.checker}'"
    elif isinstance(old, CodeCard) and old.behaviour_request() != new.behaviour_request():
        return "it judges code by another exercise (its reference, cases or versions changed)"
    return None
