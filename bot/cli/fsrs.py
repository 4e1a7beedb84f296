"""`tutor fsrs evaluate`: how well SM-2 and FSRS predict recall on a review log (issue 39.2):
the product's database, py-fsrs's CSV log, or a simulated server under several grade maps.
`tutor fsrs fit` and `tutor fsrs server`: a server's own parameters (issue 39.1)."""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

SOURCES = {"db": "the review log of --db", "csv": "py-fsrs CSV log", "sim": "simulated server"}


def _database_reviews(db: str):
    """The review log's scheduling reviews (new and due: what moves the product's states),
    in the order they were recorded; a card whose content changed starts over (restart)."""
    import sqlalchemy as sa

    from scheduler.evaluation import reviews_from_log
    from scheduler.replay import SCHEDULING
    from scheduler.storage.db import make_engine, sqlite_url
    from scheduler.storage.models import ReviewLog

    if "://" not in db:
        if not Path(db).is_file():
            raise ValueError(f"{db}: no such database file")
        db = sqlite_url(db)
    log = ReviewLog.__table__  # the store's own table, as scheduler/storage reads it
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(log.c.learner_id, log.c.card_id, log.c.quality,
                                          log.c.study_day, log.c.restart)
                                .where(log.c.kind.in_(SCHEDULING)).order_by(log.c.id)).all()
    except sa.exc.DBAPIError as exc:
        raise ValueError(f"cannot read the review log: {exc.orig}") from None
    finally:
        engine.dispose()
    return reviews_from_log(rows)


def _csv_reviews(path: str):
    from scheduler.evaluation import reviews_from_pyfsrs_csv

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return reviews_from_pyfsrs_csv(csv.DictReader(f))


def _table(evaluation: dict) -> list[str]:
    lines = [f"{evaluation['reviews']:,} reviews of {evaluation['cards']:,} cards; "
             f"{evaluation['evaluated']:,} evaluated (time-series split: {evaluation['splits']} "
             f"folds after the first {evaluation['trained_only']:,})",
             f"  {'model':<20} {'log loss':>9} {'RMSE(bins)':>11} {'AUC':>7}"]
    for model, m in evaluation["models"].items():
        auc = "-" if m["auc"] is None else f"{m['auc']:.4f}"
        lines.append(f"  {model:<20} {m['log_loss']:>9.4f} {m['rmse_bins']:>11.4f} {auc:>7}")
    return lines


def cmd_fsrs_evaluate(args) -> int:
    from scheduler.evaluation import evaluate

    try:
        if args.sim:
            from bot.bench.fsrs_evaluate import LEARNERS, evaluate_simulated

            result = evaluate_simulated(args.n or LEARNERS, seed=args.seed,
                                        splits=args.splits, fit=not args.no_fit)
        else:
            source = args.csv or args.db
            reviews = _csv_reviews(args.csv) if args.csv else _database_reviews(args.db)
            result = {"source": f"{SOURCES['csv' if args.csv else 'db']}: {source}",
                      **evaluate(reviews, splits=args.splits, fit=not args.no_fit).as_dict()}
    except (OSError, ValueError) as exc:
        print(f"tutor fsrs evaluate: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
        return 0
    print(result["source"])
    if args.sim:
        print(f"outcome: {result['outcome']}")
        for name, evaluation in result["maps"].items():
            print(f"\ngrade map {name}: {evaluation['description']}")
            print("\n".join(_table(evaluation)))
    else:
        print("\n".join(_table(result)))
    return 0


def _fits_app(args):
    from bot.app import build
    from bot.cli.common import database_url, load_library

    return build(database_url=database_url(args.db), library=load_library(), sandbox=False)


def _print_panel(fits, guild_id: int, as_json: bool) -> None:
    from bot.engine import fit_lines

    panel = fits.panel(guild_id)
    if as_json:
        print(json.dumps({
            "guild_id": guild_id, "reviews": panel.size.reviews, "days": panel.size.days,
            "refusal": panel.refusal,
            "in_force": panel.in_force and panel.in_force.version,
            "latest": panel.latest and panel.latest.model_dump(mode="json")}))
        return
    print(f"server {guild_id}: {panel.size.reviews:,} reviews over {panel.size.days} days")
    print("\n".join(fit_lines(panel)))


def cmd_fsrs_fit(args) -> int:
    """Fit one server's parameters now (--guild), or every server the weekly rule says is
    due (--due), as the bot's job does; a fit that passes is applied unless --no-apply."""
    from bot.engine import FitRefused

    with _fits_app(args) as app:
        fits = app.engine.fits
        guilds = [args.guild] if args.guild is not None else fits.due()
        if not guilds:
            print("No server is due a fit.")
        failed = 0
        for guild_id in guilds:
            try:
                fits.fit(guild_id, "command", apply=not args.no_apply)
            except FitRefused as exc:
                print(f"server {guild_id}: no fit: {exc}", file=sys.stderr)
                failed += 1
                continue
            _print_panel(fits, guild_id, args.json)
    return 1 if failed and args.guild is not None else 0


def cmd_fsrs_server(args) -> int:
    """A server's parameters: in force, the newest fit; --apply or --revert one."""
    from bot.engine import FitRefused

    with _fits_app(args) as app:
        fits = app.engine.fits
        try:
            if args.revert:
                fits.revert(args.guild)
            elif args.apply is not None:
                fits.apply(args.guild, args.apply or None)
        except FitRefused as exc:
            print(f"tutor fsrs server: {exc}", file=sys.stderr)
            return 1
        _print_panel(fits, args.guild, args.json)
    return 0


def add_commands(sub) -> None:
    """Add `tutor fsrs evaluate`, `tutor fsrs fit` and `tutor fsrs server`."""
    fsrs = sub.add_parser("fsrs", help="FSRS beside SM-2").add_subparsers(
        dest="fsrs_command", required=True)
    fit = fsrs.add_parser("fit", help="fit a server's FSRS parameters to its reviews; "
                                      "applied when they beat those in force on held-out "
                                      "reviews")
    which = fit.add_mutually_exclusive_group(required=True)
    which.add_argument("--guild", type=int, help="the server's id")
    which.add_argument("--due", action="store_true",
                       help="every server the weekly rule says is due (as the bot's job)")
    fit.add_argument("--no-apply", action="store_true",
                     help="store the fit and its comparison, but keep the parameters in force")
    server = fsrs.add_parser("server", help="a server's FSRS parameters: in force, the "
                                            "newest fit; apply or revert")
    server.add_argument("--guild", type=int, required=True, help="the server's id")
    change = server.add_mutually_exclusive_group()
    change.add_argument("--apply", type=int, nargs="?", const=0, metavar="VERSION",
                        help="put a passed fit in force (default: the newest)")
    change.add_argument("--revert", action="store_true",
                        help="go back to what was in force before the current fit")
    for command, func in ((fit, cmd_fsrs_fit), (server, cmd_fsrs_server)):
        command.add_argument("--db", help="SQLite database file (default: DATABASE_URL)")
        command.add_argument("--json", action="store_true", help="one line of JSON a server")
        command.set_defaults(func=func)
    evaluate = fsrs.add_parser(
        "evaluate", help="log loss, RMSE(bins) and AUC of SM-2 and FSRS (default and fitted) "
                         "on a review log (srs-benchmark's method)")
    source = evaluate.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="a database: SQLite file or SQLAlchemy URL (its "
                                     "review_log, graded as the product grades it)")
    source.add_argument("--csv", metavar="FILE",
                        help="a py-fsrs review log: card_id, review_rating, review_time "
                             "(.csv or .csv.gz)")
    source.add_argument("--sim", action="store_true",
                        help="a simulated server, under each grade map")
    evaluate.add_argument("-n", type=int, default=None,
                          help="--sim: learners (default 300)")
    evaluate.add_argument("--seed", type=int, default=0, help="--sim: the simulation's seed")
    evaluate.add_argument("--splits", type=int, default=5,
                          help="time-series splits (default 5, as srs-benchmark)")
    evaluate.add_argument("--no-fit", action="store_true",
                          help="only the models without parameters (SM-2, FSRS-6 default)")
    evaluate.add_argument("--json", action="store_true", help="one line of JSON")
    evaluate.set_defaults(func=cmd_fsrs_evaluate)
