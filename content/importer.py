"""Draft a deck from a practice page in the seed format (see content/sources/*.txt).

A page gives prompts, code, lettered chips and options, explanations and 'Common Mistakes'
lines, but not which chip fills which blank, which mistake a wrong choice makes or what it
does, and fill-in tasks have no hint or takeaway. The importer guesses what it can, puts
placeholders in the rest and flags both: a `flags:` entry on the card, a `# GUESS:` comment
beside the value, and a line in the returned notes. The draft is meant to validate with
`content.loader.parse_deck`, so an editor starts from a loadable deck; it is never finished.

The work is in three steps: content/practice_page.py reads the page into cards,
content/draft_guesses.py guesses what the page leaves out, and content/draft_yaml.py writes
the YAML with its comments; this module puts the deck together and checks it.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from content.draft_guesses import Draft, slug
from content.draft_yaml import emit, plain
from content.giveaway_words import ALLOW_PRAGMA
from content.loader import DeckError, parse_deck
from content.practice_page import read_page
from content.schema import SLUG_RE
from content.untrusted import read_text


def import_page(text: str, *, deck_id: str, title: str | None = None,
                source: str | None = None) -> tuple[str, list[str]]:
    """Draft deck YAML from a practice page, and notes on everything guessed or missing.

    Raises ValueError naming the page's line when the page does not follow the format.
    """
    if not re.fullmatch(SLUG_RE, deck_id) or len(deck_id) > 40:
        raise ValueError(f"deck id {deck_id!r} is not a slug like 'gradient-accumulation'")
    draft = Draft(deck_id)
    page_title, cards = read_page(text, draft)
    mistakes, merged = draft.registry()
    notes = [
        "missing: deck description (placeholder)",
        "guessed: card, chip, option and mistake ids are slugs of the page's text; rename them "
        "before anyone reviews the deck",
        "guessed: every card's only topic is the deck id",
        f"review: the {len(mistakes)} mistakes copy the page's 'Common Mistakes' lines as title "
        "and explanation",
        *(f"{card['id']}: {flag}" for card in cards for flag in card["flags"]), *merged,
    ]
    deck = {"id": deck_id, "title": title or page_title, "description": "TODO: describe the "
            f"deck (drafted from the page '{page_title}').", "version": 1}
    deck |= {"source": source} if source else {}
    deck |= {"#": "GUESS: one mistake per 'Common Mistakes' line; explanations are placeholders",
             "mistakes": mistakes, "cards": cards}
    out = "\n".join([
        f"# DRAFT imported by content/importer.py from {source or 'a practice page'}.",
        "# Guesses and placeholders are flagged (each card's `flags:`, `# GUESS:` comments).",
        "# Review every flag, fix the card and delete the flag before publishing.",
        "# Answers given away are listed in the import notes; delete the next line to check them.",
        ALLOW_PRAGMA,
        *emit(deck)]) + "\n"
    if yaml.safe_load(out) != plain(deck):
        raise RuntimeError("importer bug: the emitted YAML does not round-trip")
    try:
        parse_deck(out, "<draft>")
    except DeckError as exc:
        notes += [f"invalid: line {p.line}: {p.message}" for p in exc.problems]
    else:
        try:
            parse_deck(out, "<draft>", giveaways=True)
        except DeckError as exc:
            notes += [f"giveaway: line {p.line}: {p.message}" for p in exc.problems]
    return out, notes


def import_file(path: Path | str, out_path: Path | str, deck_id: str | None = None, *,
                overwrite: bool = False) -> list[str]:
    """Write the draft of the page at `path` to `out_path` (never over an existing file
    unless `overwrite`); the deck id defaults to a slug of the file name. Returns the notes."""
    path, out_path = Path(path), Path(out_path)
    if out_path.exists() and not overwrite:
        raise FileExistsError(f"{out_path} exists; refusing to overwrite it")
    deck_id = deck_id or slug(path.stem, "-", set())
    # A page from someone else: the upload's bounds on size and encoding.
    text, notes = import_page(read_text(path, "practice page"), deck_id=deck_id,
                              source=str(path))
    out_path.write_text(text, encoding="utf-8")
    return notes
