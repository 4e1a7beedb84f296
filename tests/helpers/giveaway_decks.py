"""Small in-memory decks for the give-away lint and the blind solver's tests."""

from __future__ import annotations

import re

from content.giveaways import check_giveaways
from content.lint import check_deck
from content.schema import Deck


def wrong(mistake: str = "oops") -> dict:
    return {"mistake": mistake, "says": "It does something else."}


def slug(text: str) -> str:
    return "c-" + re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-")


def fill_in(code: str, chips: list[str], answers: dict[str, str], *, hint: str = "Think.",
            prompt: str = "Fill the blank.", takeaway: str = "Remember it.",
            n: int = 1) -> dict:
    """A fill-in card; `chips` are texts and `answers` maps each blank to a chip text."""
    return {
        "id": f"demo/fill-{n}", "type": "fill_in", "rev": 1, "difficulty": "easy",
        "topics": ["t"], "prompt": prompt, "code": code,
        "chips": [{"id": slug(c), "text": c} for c in chips],
        "blanks": [{"id": b, "answer": slug(a),
                    "wrong": {slug(c): wrong() for c in chips if c != a}}
                   for b, a in answers.items()],
        "hint": hint, "explanation": "Because.", "takeaway": takeaway,
    }


def mcq(key: str, others: list[str], *, hint: str = "Think.", prompt: str = "Which one?",
        takeaway: str = "Remember it.", n: int = 1) -> dict:
    options = [{"id": "key", "text": key, "correct": True}]
    options += [{"id": f"w{i}", "text": text, **wrong()} for i, text in enumerate(others)]
    return {
        "id": f"demo/mcq-{n}", "type": "multiple_choice", "rev": 1, "difficulty": "easy",
        "topics": ["t"], "prompt": prompt, "options": options, "hint": hint,
        "solution": [{"title": "Step", "detail": "Reason it out."}], "takeaway": takeaway,
    }


def deck(*cards: dict) -> Deck:
    return Deck.model_validate({
        "id": "demo", "title": "Demo", "description": "Demo deck.", "version": 1,
        "mistakes": [{"id": "oops", "title": "Oops", "explanation": "A mistake."}],
        "cards": list(cards),
    })


def messages(d: Deck) -> list[tuple[tuple, str]]:
    assert not check_deck(d, giveaways=False), "the demo deck must be structurally valid"
    return check_giveaways(d)
