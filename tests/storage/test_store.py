"""The store: connection settings, migrations, the review transaction, and crashes."""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import fields
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.dialects import sqlite
from sqlmodel import SQLModel

from scheduler.storage.db import (
    AUTOCHECKPOINT_PAGES,
    MIGRATIONS_DIR,
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    sqlite_url,
    upgrade,
)
from scheduler.storage.models import CardState, Learner, ReviewLog, ServedCard, UTCDateTime
from scheduler.storage.prepared import Prepared, bind_processor
from scheduler.storage.store import (
    _LOG_COLUMNS,
    _STATE_COLUMNS,
    _STORED,
    ReviewRecord,
    StaleReview,
    Store,
    log_t,
)
from tests.helpers.paths import REPO
from tests.helpers.records import record

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
DAY = date(2026, 12, 2)


@pytest.mark.sqlite_only
def test_sqlite_connections_use_wal_foreign_keys_and_busy_timeout(engine):
    with engine.connect() as conn:
        pragma = lambda name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()  # noqa: E731
        assert pragma("journal_mode") == "wal"
        assert pragma("foreign_keys") == 1
        assert pragma("busy_timeout") == 5000
        assert pragma("synchronous") == 1  # NORMAL
        assert pragma("wal_autocheckpoint") == AUTOCHECKPOINT_PAGES


def test_migrations_build_exactly_the_models_schema(engine):
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == []


def test_upgrade_is_idempotent_and_downgrade_round_trips(tmp_path):
    engine = make_engine(sqlite_url(tmp_path / "x.db"))
    assert current_revision(engine) is None
    upgrade(engine)
    upgrade(engine)
    downgrade(engine, "base")
    assert sa.inspect(engine).get_table_names() == ["alembic_version"]
    upgrade(engine)
    assert {"learner", "card_state", "review_log", "guild_member"} <= set(
        sa.inspect(engine).get_table_names())


def test_processes_starting_on_one_new_database_migrate_it_one_at_a_time(db_url):
    """The bot and the web companion started together on a new database (as compose and
    the browser tests do): each process migrates, none fails on the other's tables."""
    code = "import sys; from bot.app import open_store; open_store(sys.argv[1])"
    starts = [subprocess.Popen([sys.executable, "-c", code, db_url], stderr=subprocess.PIPE,
                               text=True) for _ in range(4)]
    errors = [p.communicate(timeout=300)[1] for p in starts]
    assert [p.returncode for p in starts] == [0] * 4, "\n".join(errors)
    assert current_revision(make_engine(db_url)) == head_revision()


def _plans(engine, call) -> list[str]:
    """SQLite's plan for each statement `call` runs."""
    statements = []
    listen = functools.partial(sa.event.listens_for, engine, "before_cursor_execute")
    listen()(record := lambda conn, cursor, sql, params, *_: statements.append((sql, params)))
    try:
        call()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    with engine.connect() as conn:
        return [" ".join(row[-1] for row in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN " + sql, params)) for sql, params in statements]


@pytest.mark.sqlite_only
def test_a_learner_s_reviews_in_one_server_are_read_through_the_learner_s_index(store):
    """The server's index holds every review of the server: a learner's totals, days and
    weeks in one big server read through it took 80 ms, not 2."""
    from bot.bench.big_server import fill

    fill(store.engine, 1, datetime(2026, 12, 1, tzinfo=UTC), learners=300, logs=3000,
         cards=[("d", "d/c", 1, "m")])
    since = datetime(2026, 6, 1, tzinfo=UTC)
    for call in (lambda: store.reviews.totals(7, 1), lambda: store.reviews.per_day(7, since, 1),
                 lambda: store.reviews.retention_by_week(7, since, 1)):
        plans = _plans(store.engine, call)
        assert plans and all("COVERING INDEX ix_review_log_learner_time" in p for p in plans), \
            plans


def test_migrations_import_nothing_of_the_project():
    """A migration is history: one that imported the rules (0007 once imported
    scheduler.replay) would change silently with them (issue 38.6)."""
    versions = sorted((MIGRATIONS_DIR / "versions").glob("*.py"))
    assert any(p.name.startswith("0007_") for p in versions)
    for path in versions:
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add("." * node.level + (node.module or ""))
        ours = {m for m in imported
                if m.startswith(".") or m.split(".")[0] in ("bot", "content", "scheduler")}
        assert not ours, f"{path.name} imports {sorted(ours)}"


def test_learner_is_created_once(store):
    a = store.learners.get_or_create("local:ann", display_name="Ann", now=NOW)
    b = store.learners.get_or_create("local:ann", display_name="other", now=NOW)
    assert a.id == b.id and b.display_name == "Ann" and b.created_at == NOW
    with pytest.raises(ValueError):
        store.learners.update(a.id, external_id="local:bob")


def test_a_repeated_answer_id_is_recorded_once(store):
    learner = store.learners.get_or_create("local:ann", now=NOW)
    first = store.record(record(learner.id, "a1"))
    again = store.record(record(learner.id, "a1", quality=0, correct=False))
    assert not first.duplicate and again.duplicate
    assert (again.quality, again.correct) == (5, True)  # what was recorded the first time
    assert len(store.reviews.on_day(learner.id, DAY)) == 1
    assert store.reviews.state(learner.id, "d/c").review_count == 1


def test_a_stale_review_records_nothing(store):
    learner = store.learners.get_or_create("local:ann", now=NOW)
    store.record(record(learner.id, "a1"))
    store.record(record(learner.id, "a2", kind="review", expected_count=1, interval=6))
    with pytest.raises(StaleReview):  # served when the count was still 1
        store.record(record(learner.id, "a3", kind="review", expected_count=1))
    with pytest.raises(StaleReview):  # a second "first" review of the same card
        store.record(record(learner.id, "a4"))
    assert store.reviews.get("a3") is None and store.reviews.get("a4") is None
    state = store.reviews.state(learner.id, "d/c")
    assert (state.review_count, state.interval) == (2, 6)


def test_naive_datetimes_are_refused(store):
    learner = store.learners.get_or_create("local:ann", now=NOW)
    with pytest.raises(ValueError, match="naive"):
        store.record(record(learner.id, "a1", reviewed_at=datetime(2026, 12, 2, 12)))


def test_forgetting_a_learner_removes_everything_of_theirs(store):
    ann = store.learners.get_or_create("local:ann", now=NOW)
    bob = store.learners.get_or_create("local:bob", now=NOW)
    for learner in (ann, bob):
        store.record(record(learner.id, f"{learner.id}-a"))
        store.servers.note_visit(77, learner.id, NOW)
    store.learners.delete(ann.id)
    assert store.reviews.states(ann.id) == [] and store.reviews.get(f"{ann.id}-a") is None
    assert store.reviews.states(bob.id) and store.reviews.get(f"{bob.id}-a")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT learner_id FROM guild_member").all() == [(bob.id,)]


WRITER = textwrap.dedent("""
    import sys
    from scheduler.storage.db import make_engine, upgrade
    from scheduler.storage.store import Store
    from tests.helpers.records import NOW, record
    engine = make_engine(sys.argv[1])
    upgrade(engine)
    store = Store(engine)
    if sys.argv[2] == "background":
        store.checkpoint_in_background()
    learner = store.learners.get_or_create("local:crash", now=NOW)
    i = 0
    while True:
        store.record(record(learner.id, f"ack-{i}", card_id=f"d/c{i}"))
        print(f"ack-{i}", flush=True)  # acknowledged only after the commit returned
        i += 1
""")


@pytest.mark.parametrize("checkpoints", ["by-commits", "background"])
def test_kill_9_of_a_writer_loses_no_acknowledged_review(tmp_path, checkpoints):
    url = sqlite_url(tmp_path / "crash.db")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, checkpoints], cwd=REPO, stdout=subprocess.PIPE,
        text=True,
    )
    acked = [writer.stdout.readline().strip() for _ in range(2000)]
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        stored = {r[0] for r in conn.exec_driver_sql("SELECT answer_id FROM review_log")}
        states = conn.exec_driver_sql("SELECT count(*) FROM card_state").scalar()
    assert set(acked) <= stored
    assert states == len(stored)  # every logged review moved its card, and only those
    # The store keeps working on the recovered file.
    store = Store(engine)
    learner = store.learners.get_or_create("local:crash", now=NOW)
    assert not store.record(record(learner.id, "after-restart", card_id="d/new")).duplicate


def _reviews_in_the_database_file(path) -> int:
    """What a reader of the database file alone (not its write-ahead log) sees."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as db:
            return db.execute("SELECT count(*) FROM review_log").fetchone()[0]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # even the schema is still in the log alone
            return 0
        return -1  # read while a checkpoint wrote it: ask again
    except sqlite3.DatabaseError:
        return -1


@pytest.mark.sqlite_only
def test_a_thread_of_the_store_moves_the_log_into_the_database_file(tmp_path):
    """Commits only append to the write-ahead log (one of them used to copy it over every
    ~100 answers, on the event loop); with background checkpoints the store's own thread
    does it, and stops with the store."""
    engine = make_engine(sqlite_url(tmp_path / "bg.db"))
    upgrade(engine)
    store = Store(engine)
    store.checkpoint_in_background()
    try:
        learner = store.learners.get_or_create("local:ann", now=NOW)
        for i in range(20):
            store.record(record(learner.id, f"a-{i}", card_id=f"d/c{i}"))
        deadline = time.monotonic() + 60
        while _reviews_in_the_database_file(tmp_path / "bg.db") != 20:
            assert time.monotonic() < deadline, "the log never reached the database file"
            time.sleep(0.05)
    finally:
        store.close()
    assert "wal-checkpoints" not in {t.name for t in threading.enumerate()}


@pytest.mark.sqlite_only
def test_without_background_checkpoints_answers_stay_in_the_log(tmp_path):
    """The check above can fail: a few answers' commits leave them in the log alone."""
    engine = make_engine(sqlite_url(tmp_path / "fg.db"))
    upgrade(engine)
    store = Store(engine)
    learner = store.learners.get_or_create("local:ann", now=NOW)
    for i in range(20):
        store.record(record(learner.id, f"a-{i}", card_id=f"d/c{i}"))
    time.sleep(0.2)  # not a wait for a condition: nothing should happen in it
    assert _reviews_in_the_database_file(tmp_path / "fg.db") == 0
    store.close()


@pytest.mark.sqlite_only
def test_the_hot_path_stores_values_exactly_as_core_does(store):
    """Rows written by the prepared statements compare correctly with Core's binds."""
    learner = store.learners.get_or_create("local:ann", now=NOW)
    moment = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
    store.record(record(learner.id, "fast", reviewed_at=moment))
    with store.engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT reviewed_at FROM review_log").scalar()
        found = conn.execute(sa.select(sa.func.count()).select_from(log_t)
                             .where(log_t.c.reviewed_at >= moment)).scalar()
    assert stored == "2026-12-02 12:00:00.000000" and found == 1


def test_looking_up_a_known_learner_writes_nothing(store, monkeypatch):
    first = store.learners.get_or_create("discord:1", now=NOW)
    statements: list[str] = []

    def seen(conn, cursor, statement, *args):
        statements.append(statement)

    def prepared(self, cursor, values):  # the hot path's statements skip Core's events
        statements.append(self.sql)
        return run(self, cursor, values)

    run = Prepared.__call__
    monkeypatch.setattr(Prepared, "__call__", prepared)
    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        again = store.learners.get_or_create("discord:1", now=NOW)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    assert again == first and statements
    assert not [s for s in statements if s.lstrip().upper().startswith(("INSERT", "UPDATE"))]


def test_every_review_column_is_written_from_the_record():
    # One table says where each field of a ReviewRecord is stored; a column added to the
    # review log or the card state without a place in it fails here, not in production.
    control = {"expected_count", "changes_schedule"}  # guards, not data
    # Written to the misconception table and to other cards' remedy days.
    elsewhere = {"corrected", "remedies", "remedy_day"}
    assert set(_STORED) == {f.name for f in fields(ReviewRecord)} - control - elsewhere
    assert set(_LOG_COLUMNS.values()) == {c.name for c in ReviewLog.__table__.c} - {"id"}
    assert set(_STATE_COLUMNS.values()) | {"review_count", "remedy_day"} == {
        c.name for c in CardState.__table__.c}


def test_the_fast_sqlite_processors_store_exactly_what_sqlalchemy_stores():
    dialect = sqlite.dialect()
    moments = [datetime(2026, 12, 3, 10, 0, tzinfo=UTC),  # no microseconds
               datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC),
               datetime(2026, 12, 4, 1, 30, 5, 120, tzinfo=ZoneInfo("Europe/Berlin"))]
    core = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert [bind_processor(UTCDateTime(), dialect)(m) for m in moments] == [
        core(m) for m in moments]
    days = [date(2026, 1, 2), date(2026, 12, 31)]
    assert [bind_processor(sa.Date(), dialect)(d) for d in days] == [
        sa.Date().dialect_impl(dialect).bind_processor(dialect)(d) for d in days]
    with pytest.raises(ValueError, match="naive"):
        bind_processor(UTCDateTime(), dialect)(datetime(2026, 12, 3, 10))


def test_prepared_reads_give_what_core_reads(store):
    """The hot path's learner and served-card reads skip Core: each value must come back as
    Core would read it (dates, UTC datetimes, booleans, JSON)."""
    learner = store.learners.get_or_create("discord:7", display_name="Zoë", now=NOW)
    store.learners.update(learner.id, day_reviews_day=NOW.date(), reminders_enabled=True,
                          next_reminder_at=NOW, quiet_start=22)
    store.served.save("s-1", learner.id, {"attempts": 1, "nested": {"ü": [1, 2.5, None]}},
                      NOW)
    fast = (store.learners.get_or_create("discord:7", now=NOW), store.served.load("s-1"))
    with store.engine.connect() as conn:
        learner_row = conn.execute(sa.select(Learner.__table__).where(
            Learner.__table__.c.id == learner.id)).one()
        served_row = conn.execute(sa.select(ServedCard.__table__)).one()
    core = (Learner.model_validate(learner_row._mapping), ServedCard(**served_row._mapping))
    served = fast[1]._asdict()
    assert served.pop("owner") == "discord:7"  # with its learner's external id
    for got, want in zip((fast[0].model_dump(), served),
                         (c.model_dump() for c in core), strict=True):
        assert got == want
        assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in want.items()}
