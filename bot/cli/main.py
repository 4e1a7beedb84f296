"""The `tutor` command line (also `python -m bot`). With no command it starts practice."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from bot.cli.common import database_url, load_library, load_settings

NO_TOKEN = (
    "No Discord token: set DISCORD_TOKEN in the environment or in a .env file "
    "(README: 'Running the Discord bot').\nTo practise without Discord: tutor practice"
)


def cmd_practice(args) -> int:
    """Practise in the terminal: the bundled decks and the decks stored in the database
    (`tutor deck publish`), or one of them."""
    from bot.app import build

    # One app, its sandbox and judge built with it (a mistyped deck or topic costs the
    # sandbox's start, about a second, and says so before any card).
    with build(database_url=database_url(args.db), library=load_library(),
               sandbox=False if args.no_sandbox else None) as app:
        problem = _practice_problem(app.tutor.library, args)
        if problem:
            print(problem, file=sys.stderr)
            return 2
        console = app.console(args.learner or getpass.getuser() or "me", args.deck,
                              topic=args.topic, scheduler=args.scheduler,
                              remediation=args.remediation)
        return console.run()


def _practice_problem(library, args) -> str | None:
    if args.deck and args.deck not in library.decks:
        return f"No deck '{args.deck}'. Decks: {', '.join(library.decks)}"
    topics = {t for card in library.cards(args.deck) for t in card.topics}
    if args.topic and args.topic not in topics:
        return f"No topic '{args.topic}'. Topics: {', '.join(sorted(topics))}"
    return None


def cmd_run(args) -> int:
    from bot.observability import configure_logging

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    if not settings.token:
        print(NO_TOKEN, file=sys.stderr)
        return 2
    from bot.app import run

    return run(settings)


def cmd_web(args) -> int:
    """The web companion. The web process holds no bot token: it is dropped from the
    environment before anything starts (the sandbox's children included)."""
    import os

    os.environ.pop("DISCORD_TOKEN", None)
    from bot.app import WebRefused, serve_web
    from bot.observability import configure_logging
    from bot.settings import WebSettings

    overrides = {k: v for k, v in (("web_host", args.host), ("web_port", args.port),
                                   ("sandbox", False if args.no_sandbox else None))
                 if v is not None}
    settings = WebSettings(**overrides)
    configure_logging(settings.log_level, settings.log_format)
    try:
        return serve_web(settings, args.learner or getpass.getuser() or "me")
    except WebRefused as refused:
        print(refused, file=sys.stderr)
        return 2


def cmd_deck_validate(args) -> int:
    """Every file through the upload's checks (Discord's limits too): a file from someone
    else is untrusted. Only the give-away pragma is honoured, as a draft may carry it. Then
    the behaviour exercises of the valid files are tried in the sandbox as publish tries
    them (unless --no-sandbox), and what was not run is said. A valid file's notes (a
    mistake only one card tests: remediation needs two) go to stderr."""
    from bot.cli.deck import tried_exercises
    from bot.engine import check_limits, counted
    from content.loader import DeckError, deck_files
    from content.untrusted import file_notes, load_file

    problems, notes, files, valid = [], [], deck_files(args.paths), []
    for file in files:
        try:
            deck = load_file(file, check_limits)
        except DeckError as exc:  # in line order, each naming its card, as an upload shows them
            problems += exc.problems
            notes += [f"{file}: {note}" for note in exc.notes]
        else:
            notes += file_notes(file, deck)
            valid.append((file, deck))
    tried, said, untried = tried_exercises(valid, run=not args.no_sandbox)
    for problem in [*problems, *tried]:
        print(problem)
    for note in [*notes, *said]:  # on stderr: a note is no problem, and changes no exit status
        print(note, file=sys.stderr)
    if not problems and not tried:
        print(f"{counted(len(files), 'deck file')} valid" + (
            f"; the behaviour exercises of {untried} were not run (above)." if untried
            else "."), file=sys.stderr)
    return 1 if problems or tried or not files else 0


def cmd_deck_dump(args) -> int:
    from content.schema import resolved

    library = load_library(args.deck)
    decks = [library.deck(args.deck)] if args.deck else list(library.decks.values())
    data = [resolved(deck) for deck in decks]
    print(json.dumps(data[0] if args.deck else data, indent=2, ensure_ascii=False))
    return 0


def cmd_deck_import(args) -> int:
    """Draft a deck from a practice page; every guess is flagged for an editor."""
    from bot.engine import counted
    from content.importer import import_file
    from content.untrusted import Refused

    try:
        notes = import_file(args.page, args.output, args.deck_id, overwrite=args.force)
    except FileExistsError:
        print(f"{args.output} exists: choose another name, or --force", file=sys.stderr)
        return 2
    except Refused as exc:
        print(f"{args.page}:{exc.line}: {exc.message}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"{args.page}: {exc}", file=sys.stderr)
        return 1
    print(f"Wrote {args.output}: a draft with {counted(len(notes), 'thing')} to review:")
    for note in notes:
        print(f"  - {note}")
    return 0


def cmd_deck_export(args) -> int:
    from bot.engine import counted
    from content.anki import export_apkg

    library = load_library(args.deck)
    decks = [library.deck(args.deck)] if args.deck else list(library.decks.values())
    if len(decks) > 1:
        print("Several decks are loaded: choose one with --deck", file=sys.stderr)
        return 2
    count = export_apkg(decks[0], args.anki)
    print(f"Wrote {args.anki}: {counted(count, 'note')} from '{decks[0].id}' for Anki.")
    return 0


def cmd_deck_schema(args) -> int:
    from content.schema import json_schema

    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_db_upgrade(args) -> int:
    from scheduler.storage.db import current_revision, make_engine, upgrade

    engine = make_engine(database_url(args.db))
    before = current_revision(engine)
    upgrade(engine)
    after = current_revision(engine)
    url = engine.url.render_as_string(hide_password=True)
    print(f"{url}: {before or 'empty'} -> {after}" if before != after
          else f"{url}: already at {after}")
    return 0


def cmd_bench(args) -> int:
    from bot.bench import run_benchmark

    result = run_benchmark(args.name, args)
    print(json.dumps(result, indent=None if args.json else 2))
    return 0 if result.get("ok", True) else 1


def build_parser() -> argparse.ArgumentParser:
    from bot.bench import BENCHMARKS
    from bot.cli.deck import add_commands as add_deck_commands
    from bot.cli.fsrs import add_commands as add_fsrs_commands
    from bot.cli.sandbox import add_commands as add_sandbox_commands
    from scheduler.choice import SchedulerName

    parser = argparse.ArgumentParser(prog="tutor", description=__doc__)
    sub = parser.add_subparsers(dest="command")

    practice = sub.add_parser("practice", help="practise in the terminal (no Discord needed)")
    practice.add_argument("--deck", help="deck id (default: every deck)")
    practice.add_argument("--db", help="SQLite file (default: $DATABASE_URL or tutor.db)")
    practice.add_argument("--learner", help="your name (default: your login)")
    practice.add_argument("--topic", help="practise one topic, due or not (q to stop)")
    practice.add_argument("--no-sandbox", action="store_true",
                          help="skip code cards (no sandbox service)")
    practice.add_argument("--scheduler", choices=[*map(str, SchedulerName)],
                          help="schedule this session by SM-2 or FSRS (default: your "
                               "setting; both are always kept, so switching loses nothing)")
    practice.add_argument("--remediation", action=argparse.BooleanOptionalAction,
                          help="bring cards on a mistake you just made forward (default: "
                               "your server's choice, else off)")
    practice.set_defaults(func=cmd_practice)

    run = sub.add_parser("run", help="run the Discord bot (needs DISCORD_TOKEN)")
    run.set_defaults(func=cmd_run)

    web = sub.add_parser("web", help="the web companion: progress, leaderboards, deck editor")
    web.add_argument("--host", help="address to serve on (default: $WEB_HOST or 127.0.0.1)")
    web.add_argument("--port", type=int, help="default: $WEB_PORT or 8080")
    web.add_argument("--learner", help="local mode: the terminal's learner (default: your "
                                       "login, as `tutor practice`)")
    web.add_argument("--no-sandbox", action="store_true",
                     help="do not try deck exercises (no sandbox service)")
    web.set_defaults(func=cmd_web)

    deck = sub.add_parser("deck", help="check and inspect decks").add_subparsers(
        dest="deck_command", required=True)
    validate = deck.add_parser("validate", help="check deck files; exit 1 on any problem")
    validate.add_argument("paths", nargs="*", help="files or folders (default: bundled decks)")
    validate.add_argument("--no-sandbox", action="store_true",
                          help="do not try behaviour exercises in the sandbox (their code is "
                               "still compiled)")
    validate.set_defaults(func=cmd_deck_validate)
    dump = deck.add_parser("dump", help="print the resolved deck(s)")
    dump.add_argument("--deck")
    dump.add_argument("--json", action="store_true", help="JSON output (the only format)")
    dump.set_defaults(func=cmd_deck_dump)
    draft = deck.add_parser("import", help="draft a deck from a practice page (seed format)")
    draft.add_argument("page")
    draft.add_argument("-o", "--output", required=True, help="the draft YAML to write")
    draft.add_argument("--deck-id", help="default: from the page's file name")
    draft.add_argument("--force", action="store_true", help="overwrite the output")
    draft.set_defaults(func=cmd_deck_import)
    export = deck.add_parser("export", help="export a deck for another app")
    export.add_argument("--anki", required=True, metavar="OUT.apkg")
    export.add_argument("--deck")
    export.set_defaults(func=cmd_deck_export)
    schema = deck.add_parser("schema", help="print the deck JSON Schema")
    schema.add_argument("-o", "--output")
    schema.set_defaults(func=cmd_deck_schema)
    add_deck_commands(deck)

    add_sandbox_commands(sub)

    db = sub.add_parser("db", help="database maintenance").add_subparsers(
        dest="db_command", required=True)
    db_upgrade = db.add_parser("upgrade", help="apply migrations")
    db_upgrade.add_argument("--db", help="SQLite file (default: $DATABASE_URL)")
    db_upgrade.set_defaults(func=cmd_db_upgrade)

    add_fsrs_commands(sub)

    bench = sub.add_parser("bench", help="benchmarks (JSON on stdout)")
    bench.add_argument("name", choices=sorted(BENCHMARKS))
    bench.add_argument("--json", action="store_true", help="one line of JSON")
    bench.add_argument("-n", type=int, default=None, help="operations per measurement")
    bench.add_argument("--reps", type=int, default=None,
                       help="discord: measurements of each bot, in alternating order")
    bench.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                       help="sandbox: where the learner's loop runs")
    bench.add_argument("--fast", action="store_true",
                       help="faults: the tests' short limits, heartbeats and takeovers; "
                            "trials: 2 s naps")
    bench.add_argument("--only", help="faults: these faults only (comma-separated names)")
    bench.add_argument("--world", choices=["fsrs", "actr"], default=None,
                       help="learning, remediation: the simulated learners' memory model "
                            "(default fsrs: FSRS-4.5's own; actr: ACT-R's activation)")
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:  # the bot when a token is configured, else terminal practice
        args = build_parser().parse_args(["run" if load_settings().token else "practice"])
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
