"""`tutor fsrs evaluate` on a database the engine wrote, on py-fsrs's CSV log, and its
refusals."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from bot.bench.sim.deck import sim_cards
from bot.bench.sim.engine_policy import EnginePolicy
from bot.bench.sim.run import SimConfig, simulate
from content.loader import DeckLibrary
from scheduler.evaluation import MODELS
from tests.helpers.cli import tutor
from tests.helpers.paths import FIXTURES


@pytest.fixture(scope="module")
def engine_db(tmp_path_factory):
    """Three simulated learners' 30 days through the real engine (SM-2, our grade map) on a
    SQLite file: its review_log as the bot writes it."""
    folder = tmp_path_factory.mktemp("engine")
    library = DeckLibrary.load()
    policy = EnginePolicy(folder, library, "sm2", False)
    try:
        simulate(policy, sim_cards(library.cards(None)),
                 SimConfig(learners=3, days=30, seed=5, new_per_day=6))
    finally:
        policy.close()
    return folder / "learning.db"


def test_evaluate_reads_the_scheduling_reviews_of_the_engines_log(engine_db):
    result = tutor("fsrs", "evaluate", "--db", str(engine_db), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    with sa.create_engine(f"sqlite:///{engine_db}").connect() as conn:
        kinds = dict(conn.execute(sa.text(
            "SELECT kind, count(*) FROM review_log GROUP BY kind")).all())
    assert kinds["drill"] > 0  # drills are logged, and are not scheduling reviews
    assert report["reviews"] == kinds["new"] + kinds["review"]
    assert report["cards"] == kinds["new"]  # every card met once as new, never restarted
    assert list(report["models"]) == list(MODELS)
    for scores in report["models"].values():
        assert 0 < scores["log_loss"] < 2 and 0 <= scores["rmse_bins"] <= 1
    # too few reviews to fill one batch (512; fewer learners if the deck grows): the fit
    # keeps py-fsrs's defaults
    scored, splits = report["evaluated"] + report["trained_only"], report["splits"]
    assert scored * splits / (splits + 1) < 512  # the last fold's training part, the largest
    assert report["models"]["FSRS-6 fitted"] == report["models"]["FSRS-6 default"]


def test_evaluate_prints_a_table(engine_db):
    result = tutor("fsrs", "evaluate", "--db", f"sqlite:///{engine_db}", "--no-fit")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"the review log of --db: sqlite:///{engine_db}"
    assert "evaluated (time-series split: 5 folds after the first" in lines[1]
    assert lines[2].split() == ["model", "log", "loss", "RMSE(bins)", "AUC"]
    assert [line.split()[0] for line in lines[3:]] == ["SM-2", "FSRS-6"]


def test_evaluate_reads_pyfsrs_csv(tmp_path):
    rows = ["card_id,review_rating,review_time,review_duration"]
    for card in range(12):
        for day, rating in ((1, 3), (2, 3 if card % 3 else 1), (5, 3), (12, 1 + card % 4)):
            rows.append(f"{card},{rating},2024-04-{day:02d}T18:00:00+00:00,5000")
    log = tmp_path / "log.csv"
    log.write_text("\n".join(rows) + "\n")
    result = tutor("fsrs", "evaluate", "--csv", str(log), "--json", "--no-fit")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["reviews"], report["cards"], report["splits"]) == (48, 12, 5)
    assert report["evaluated"] + report["trained_only"] == 36
    public = tutor("fsrs", "evaluate", "--csv", str(
        FIXTURES / "review_logs_josh_1711744352250_to_1728234780857.csv.gz"), "--no-fit",
        "--json")
    assert json.loads(public.stdout)["reviews"] == 12_580


def test_evaluate_refuses_a_missing_source_with_one_line(tmp_path):
    missing = tutor("fsrs", "evaluate", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and not (tmp_path / "none.db").exists()
    assert missing.stderr.strip() == f"tutor fsrs evaluate: {tmp_path / 'none.db'}: no such " \
                                     "database file"
    bad = tmp_path / "bad.csv"
    bad.write_text("card_id,review_rating,review_time\n1,7,2024-04-01T00:00:00\n")
    refused = tutor("fsrs", "evaluate", "--csv", str(bad))
    assert refused.returncode == 2 and "line 2" in refused.stderr
    assert tutor("fsrs", "evaluate").returncode == 2  # a source is required


def test_fit_and_server_commands_fit_apply_and_revert_a_servers_parameters(tmp_path):
    from datetime import date, timedelta

    from bot.app import open_store
    from scheduler.storage.db import sqlite_url
    from tests.helpers.server_logs import FAST_FORGETTERS, fsrs_world, seed_server_log

    db = tmp_path / "tutor.db"
    store = open_store(sqlite_url(db))
    try:
        seed_server_log(store, 42, fsrs_world(10, 32, 1, FAST_FORGETTERS),
                        date.today() - timedelta(days=32))
        seed_server_log(store, 43, fsrs_world(10, 32, 1, FAST_FORGETTERS)[:900],
                        date.today() - timedelta(days=32))
    finally:
        store.close()
        store.engine.dispose()
    small = tutor("fsrs", "fit", "--db", str(db), "--guild", "43")
    assert small.returncode == 1
    assert "server 43: no fit: needs 2,000 reviews over 30 days" in small.stderr
    kept = tutor("fsrs", "fit", "--db", str(db), "--guild", "42", "--no-apply")
    assert kept.returncode == 0, kept.stderr
    assert "In force: FSRS's default parameters." in kept.stdout
    assert "Newest: fit #1, " in kept.stdout and "passed, not applied." in kept.stdout
    applied = tutor("fsrs", "server", "--db", str(db), "--guild", "42", "--apply", "--json")
    assert applied.returncode == 0, applied.stderr
    shown = json.loads(applied.stdout)
    assert shown["in_force"] == 1 and shown["latest"]["passed"]
    assert shown["latest"]["report"]["gates"][0]["versus"] == "defaults"
    reverted = tutor("fsrs", "server", "--db", str(db), "--guild", "42", "--revert")
    assert "In force: FSRS's default parameters." in reverted.stdout
    again = tutor("fsrs", "server", "--db", str(db), "--guild", "42", "--revert")
    assert again.returncode == 1 and "already schedules with FSRS's default" in again.stderr
    # The weekly rule: the big server was fitted just now, the small one is below the floor.
    due = tutor("fsrs", "fit", "--db", str(db), "--due")
    assert due.returncode == 0 and due.stdout.strip() == "No server is due a fit."
