"""`tutor deck publish|list`: operators store a server's deck and see every deck; and the
sandbox half of `tutor deck validate` (its behaviour exercises tried as publish tries them)."""

from __future__ import annotations

import sys
from pathlib import Path

from bot.cli.common import database_url, load_library, load_settings

VALIDATE_SERVER = 0  # the server validate's trials run as (a fleet holds one per server)


def _app(args, sandbox: bool = False):
    """The tutor on `--db` (or DATABASE_URL) and the bundled decks; the code sandbox only
    when asked for (a deck's behaviour exercises are tried in it before it is stored)."""
    from bot.app import build

    return build(database_url=database_url(args.db), library=load_library(), sandbox=sandbox)


def _has_exercises(data: bytes) -> bool:
    """Whether the deck has behaviour cards to try (a deck with problems: the upload
    says which)."""
    from bot.engine import exercises_of
    from content.untrusted import UntrustedDeck, parse_untrusted

    try:
        return bool(exercises_of(parse_untrusted(data)[0]))
    except UntrustedDeck:
        return False


def tried_exercises(decks: list, run: bool) -> tuple[list[str], list[str], int]:
    """Each valid (path, deck)'s behaviour exercises tried in the sandbox, the trial publish
    makes, unless not `run`: (problems as file:line: card <id>: message, notes on what was tried and
    what was not, how many files' were not run). The sandbox starts as publish starts it
    (its own service, or SANDBOX_ADDRESS), only when a deck has exercises."""
    from bot.engine import ExercisesUntried, counted, exercise_findings, exercises_of
    from content.untrusted import labelled, read_text

    decks = [(path, deck) for path, deck in decks if exercises_of(deck)]
    if not decks or not run:
        return [], [_not_run(path, "--no-sandbox") for path, _ in decks], len(decks)
    from bot.app import start_sandbox

    settings = load_settings()
    code = start_sandbox(settings.sandbox_address, settings.sandbox_allow_unbounded_memory)
    if code is None:
        why = ("the code sandbox could not start here (the log above says why; `tutor "
               "sandbox doctor` checks this host)")
        return [], [_not_run(path, why) for path, _ in decks], len(decks)
    problems, notes, untried = [], [], 0
    try:
        for path, deck in decks:
            try:
                text = read_text(path)
                found = exercise_findings(code.judge, deck, text, VALIDATE_SERVER)
            except ExercisesUntried as exc:
                notes.append(_not_run(path, exc.reason))
                untried += 1
                continue
            problems += [f"{path}:{line}: {message}"  # as publish and uploads name them
                         for line, message in labelled(text, found)]
            if not found:
                tried = counted(len(exercises_of(deck)), "behaviour exercise")
                notes.append(f"{path}: its {tried} were tried in the sandbox, as publish "
                             "tries them: no problems")
    finally:
        code.stop()
    return problems, notes, untried


def _not_run(path, why: str) -> str:
    return (f"{path}: behaviour exercises not run ({why}): their code compiles and defines "
            "its names, but whether each reference runs and each version can be told apart "
            "is known only once they run: validate where the sandbox starts, or `tutor deck "
            "publish`, which tries them before storing")


def cmd_deck_publish(args) -> int:
    """Store FILE as the guild's deck, through the same checks as an upload in Discord."""
    from bot.engine import DeckRejected, Draft
    from content.untrusted import Refused, read_bounded

    path = Path(args.file)
    try:
        data = read_bounded(path)
    except OSError as exc:
        print(f"{path}: cannot read: {exc}", file=sys.stderr)
        return 1
    except Refused as exc:
        print(f"{path}: line {exc.line}: {exc.message}", file=sys.stderr)
        return 1
    with _app(args, sandbox=_has_exercises(data)) as app:
        decks = app.engine.decks
        try:
            result = decks.upload(args.guild, path.name, data, uploaded_by="cli")
            if isinstance(result, Draft):
                print(f"{path} is a practice page: draft a deck from it with "
                      "`tutor deck import`.", file=sys.stderr)
                return 1
            if args.public:
                decks.publish(args.guild, result.deck_id, True)
        except DeckRejected as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            for problem in exc.problems:
                print(f"{path}: {problem}")
            return 1
    print(f"Stored '{result.deck_id}' version {result.version} ({result.cards} cards) for "
          f"guild {args.guild}{', published' if args.public else ''}.")
    return 0


def cmd_deck_list(args) -> int:
    """Bundled and stored decks: id, owner, version, cards, public, removed."""
    with _app(args) as app:
        rows = [(d.id, "bundled", d.version, len(d.cards), "yes", "no")
                for d in app.tutor.decks.bundled.decks.values()]
        rows += [(r.deck_id, str(r.owner_guild_id), r.version, r.cards,
                  "yes" if r.public else "no", "yes" if r.removed else "no")
                 for r in app.store.decks.all()]
    table = [("id", "owner", "version", "cards", "public", "removed"), *rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(6)]
    for row in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return 0


def add_commands(deck) -> None:
    """Add `publish` and `list` to the `tutor deck` subcommands."""
    publish = deck.add_parser("publish", help="store a deck file as a server's deck (the "
                                              "upload checks apply)")
    publish.add_argument("file", help="a .yaml deck file")
    publish.add_argument("--guild", type=int, required=True, help="the owning server's id")
    publish.add_argument("--public", action="store_true", help="also let any server enable it")
    publish.add_argument("--db", help="SQLite file (default: $DATABASE_URL)")
    publish.set_defaults(func=cmd_deck_publish)
    listing = deck.add_parser("list", help="bundled and stored decks")
    listing.add_argument("--db", help="SQLite file (default: $DATABASE_URL)")
    listing.set_defaults(func=cmd_deck_list)
