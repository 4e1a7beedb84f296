"""What the `tutor` commands share: the settings, the database they name and the decks."""

from __future__ import annotations

import sys


def load_settings():
    from bot.settings import Settings

    return Settings()


def database_url(db: str | None) -> str:
    """`--db FILE` as a SQLite URL, else DATABASE_URL (or its default)."""
    from scheduler.storage.db import sqlite_url

    return sqlite_url(db) if db else load_settings().database_url


def load_library(deck_id: str | None = None):
    """Load the decks, or exit: 1 with every problem as file:line: message, 2 for an
    unknown deck id."""
    from content.loader import DeckError, DeckLibrary

    try:
        library = DeckLibrary.load()
    except DeckError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        sys.exit(1)
    if deck_id and deck_id not in library.decks:
        print(f"No deck '{deck_id}'. Decks: {', '.join(library.decks)}", file=sys.stderr)
        sys.exit(2)
    return library
