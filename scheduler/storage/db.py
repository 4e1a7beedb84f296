"""Database engines, migrations, and the base of the store's query groups.

SQLite connections get WAL, foreign keys and a busy timeout on connect (docs/architecture.md,
"Storage"; a kill -9 in WAL mode lost no acknowledged review; synchronous=NORMAL risks the
last commits only on power loss). Schema changes go through Alembic, never `create_all`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import threading
import uuid
import zlib
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.dialects import postgresql, sqlite

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
DEFAULT_URL = "sqlite:///tutor.db"
# A commit that finds the write-ahead log past this many pages copies it into the database
# file itself. SQLite's default (1,000) made one answer in ~100 do that on the event loop
# (~3 ms, and the files' syncs); `BackgroundCheckpoints` keeps the log far below this.
AUTOCHECKPOINT_PAGES = 8000
CHECKPOINT_EVERY_S = 0.05
log = logging.getLogger(__name__)


class DriverConnections:
    """DBAPI connections for the hot path (an answer's reads and its one transaction), on
    which `prepared` statements run. SQLite: one long-lived connection under a lock, since
    a pool checkout per call would cost more than the statement (the database takes one
    writer at a time anyway; a SELECT outside a transaction sees every commit). A server:
    a pooled connection each time, so concurrent answers commit side by side instead of
    queueing for one flush each. The pool's proxy is kept (to close it properly); the
    driver's connection works."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self.on_server = engine.dialect.name != "sqlite"
        self._lock = threading.Lock()
        self._conn = None

    @contextlib.contextmanager
    def use(self):
        if self.on_server:
            pooled = self.engine.raw_connection()
            try:
                yield pooled.driver_connection
            finally:
                pooled.close()  # the pool rolls back what is left open
            return
        with self._lock:
            if self._conn is None:
                self._conn = self.engine.raw_connection()
            yield self._conn.driver_connection

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class BackgroundCheckpoints:
    """SQLite only: copies the write-ahead log into the database file from a thread of its
    own, on a connection of its own, every CHECKPOINT_EVERY_S seconds (PASSIVE: it never
    waits for or blocks a writer; sqlite3 lets go of the GIL while it copies). So no
    answer's commit pays for it. What a commit makes durable is unchanged: a checkpoint
    only moves committed pages."""

    def __init__(self, engine: sa.Engine, every_s: float = CHECKPOINT_EVERY_S):
        self.engine = engine
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="wal-checkpoints",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        conn = self.engine.raw_connection()
        try:
            while not self._stop.wait(self.every_s):
                try:
                    conn.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except Exception:  # noqa: BLE001 - commits checkpoint past the backstop
                    log.exception("background WAL checkpoint failed; commits will do it")
                    return
        finally:
            conn.close()


class Queries:
    """One group of the store's queries (scheduler/storage/store.py): every group is built
    alike, on the shared engine and the hot path's driver connections."""

    def __init__(self, engine: sa.Engine, connections: DriverConnections):
        self.engine = engine
        self.connections = connections

    # The hot path's statements (scheduler/storage/prepared.py) on the driver connections.

    def read(self, select, values: dict):
        """A PreparedSelect's rows (attribute access, as Core's rows)."""
        with self.connections.use() as conn:
            return select.all(conn, values)

    def write(self, statement, values: dict) -> int:
        """One Prepared statement in a transaction of its own: the rows it wrote."""
        with self.connections.use() as conn:
            cursor = conn.cursor()
            try:
                written = statement(cursor, values)
            except BaseException:
                conn.rollback()
                raise
            finally:
                cursor.close()
            conn.commit()
        return written


def upsert_insert(table: sa.Table, dialect_name: str):
    """An INSERT that takes ON CONFLICT clauses, for this dialect (SQLite or PostgreSQL)."""
    module = postgresql if dialect_name == "postgresql" else sqlite
    return module.insert(table)


@contextlib.contextmanager
def throwaway_database(admin_url: str, prefix: str):
    """A new PostgreSQL database on the server of `admin_url` (its URL), dropped afterwards,
    for a test or a benchmark."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.engine.make_url(admin_url).set(database=name).render_as_string(
            hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.dispose()


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path)}"


def _on_sqlite_connect(dbapi_conn, _record, synchronous: str) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    cursor.close()


def make_engine(url: str = DEFAULT_URL, *, synchronous: str = "NORMAL") -> sa.Engine:
    if synchronous not in {"NORMAL", "FULL", "EXTRA"}:
        raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA, not {synchronous!r}")
    is_sqlite = sa.engine.make_url(url).get_backend_name() == "sqlite"
    # The review writer connection is shared across threads, under the store's lock.
    engine = sa.create_engine(url, connect_args={"check_same_thread": False} if is_sqlite else {})
    if is_sqlite:
        sa.event.listen(
            engine,
            "connect",
            lambda conn, rec: _on_sqlite_connect(conn, rec, synchronous),
        )
    return engine


def _alembic_config(engine: sa.Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


# The bot and the web companion (or two replicas) started on one new database used to
# migrate it at once: one died on "table learner already exists" or "database is locked".
MIGRATION_LOCK_KEY = zlib.crc32(b"tutor schema migrations")


@contextlib.contextmanager
def _one_migrator(engine: sa.Engine):
    """Held by one process at a time. SQLite: an flock on a file beside the database (not
    on the database itself, since closing any descriptor of that file drops SQLite's own
    locks). PostgreSQL: an advisory lock, taken inside the migration's transaction."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        yield
        return
    with open(f"{database}.migrate-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _migrate(engine: sa.Engine, step, revision: str) -> None:
    config = _alembic_config(engine)
    with _one_migrator(engine), engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                               {"key": MIGRATION_LOCK_KEY})
        config.attributes["connection"] = connection
        step(config, revision)


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Apply migrations up to `revision` (idempotent)."""
    _migrate(engine, command.upgrade, revision)


def downgrade(engine: sa.Engine, revision: str) -> None:
    _migrate(engine, command.downgrade, revision)


def current_revision(engine: sa.Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
