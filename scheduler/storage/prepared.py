"""Core statements compiled once and run on a DBAPI cursor: the answer hot path."""

from __future__ import annotations

import collections
import json
import operator
from datetime import UTC, date, datetime

import sqlalchemy as sa

from scheduler.storage.models import UTCDateTime


class Prepared:
    """A Core statement compiled once for this dialect, run on a DBAPI cursor.

    Values go through the columns' own bind processors, so rows are stored exactly as
    Core stores them, without Core's per-call cache lookup, execution context and result
    set-up: together more than half the cost of a review on SQLite (`tutor bench answers`).
    """

    def __init__(self, statement: sa.Executable, dialect: sa.Dialect, keys: list[str]):
        # Positional parameters where the driver takes them (sqlite3's `?`): a list binds
        # faster than a dict of names.
        compiler_dialect = type(dialect)(paramstyle="qmark") if dialect.name == "sqlite" \
            else dialect
        compiled = statement.compile(dialect=compiler_dialect, column_keys=keys)
        self.sql = compiled.string
        names = compiled.positiontup if compiled.positional else list(compiled.binds)
        self.positional = compiled.positional
        self.binds = [(name, bind_processor(compiled.binds[name].type, dialect))
                      for name in names]
        # Literals in the statement (`day_reviews + 1`) are binds with a value of their own.
        self.literals = {name: bind.value for name, bind in compiled.binds.items()
                         if not bind.required}
        # A name used at several placeholders (the streak update's day) is converted once.
        self.distinct = list(dict(self.binds).items())
        self.repeats = len(self.distinct) < len(self.binds)

    def __call__(self, cursor, values: dict) -> int:
        """Execute; return the number of rows written."""
        if self.literals:
            values = {**self.literals, **values}
        if self.repeats:
            values = {n: p(values[n]) if p else values[n] for n, p in self.distinct}
            cursor.execute(self.sql, [values[n] for n, _ in self.binds] if self.positional
                           else values)
        elif self.positional:  # one value per placeholder, in the SQL's order
            cursor.execute(self.sql, [p(values[n]) if p else values[n] for n, p in self.binds])
        else:
            cursor.execute(self.sql, {n: p(values[n]) if p else values[n]
                                      for n, p in self.binds})
        return cursor.rowcount

    def of_record(self, field_of: dict[str, str], constants: dict | None = None):
        """A faster `__call__` for values that are attributes of one record:
        `run(cursor, record)`, bind name -> attribute name in `field_of`, or a value in
        `constants` (or the statement's literals)."""
        fixed = {**self.literals, **(constants or {})}
        names = list(dict.fromkeys(n for n, _ in self.binds if n not in fixed))
        get = operator.attrgetter(*(field_of[n] for n in names))
        # Each placeholder: (its index in what `get` returns, or None for a fixed value,
        # converted here once).
        slots = [(None, None, p(fixed[n]) if p else fixed[n]) if n in fixed
                 else (names.index(n), p, None) for n, p in self.binds]
        sql, positional = self.sql, self.positional

        def run(cursor, record) -> int:
            got = get(record)
            if len(names) == 1:
                got = (got,)
            values = [fixed_value if i is None else p(got[i]) if p else got[i]
                      for i, p, fixed_value in slots]
            cursor.execute(sql, values if positional else dict(
                zip((n for n, _ in self.binds), values, strict=True)))
            return cursor.rowcount

        return run


class PreparedSelect(Prepared):
    """A Core SELECT compiled once: its rows as named tuples (attribute access, as Core's
    rows), each value through the column's own result processor, as Core reads it (tests
    hold them equal)."""

    def __init__(self, statement: sa.Select, dialect: sa.Dialect):
        super().__init__(statement, dialect, [])
        self.columns = list(statement.selected_columns)
        self.dialect = dialect
        self.row = collections.namedtuple("Row", [c.key for c in self.columns])
        self.processors: list | None = None  # on the first run: they take the driver's types

    def _processors(self, description) -> list:
        return [(i, p) for i, (column, described) in enumerate(
                    zip(self.columns, description, strict=True))
                if (p := column.type.dialect_impl(self.dialect).result_processor(
                    self.dialect, described[1]))]

    def all(self, conn, values: dict) -> list:
        cursor = conn.cursor()
        try:
            self(cursor, values)
            rows = cursor.fetchall()
            if self.processors is None:
                self.processors = self._processors(cursor.description)
        finally:
            cursor.close()
        if not self.processors:
            return [self.row._make(row) for row in rows]
        made = []
        for row in rows:
            row = list(row)
            for i, p in self.processors:
                row[i] = p(row[i])
            made.append(self.row._make(row))
        return made


def bind_processor(type_: sa.types.TypeEngine, dialect: sa.Dialect):
    """The column's own processor (dialect_impl: SQLite's datetime format), exactly what
    Core applies; for SQLite's dates and UTC datetimes the same text from C-implemented
    isoformat, a third of the answer path's bind cost (tests hold them equal)."""
    if dialect.name == "sqlite":
        if isinstance(type_, UTCDateTime):
            return _sqlite_utc_datetime
        if type(type_) is sa.Date:
            return _sqlite_date
        if type(type_) is sa.JSON and dialect._json_serializer is None:
            return json.dumps  # Core's own default serializer, without its wrapper
    return type_.dialect_impl(dialect).bind_processor(dialect)


def _sqlite_date(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


def _sqlite_utc_datetime(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("naive datetime: pass an aware (UTC) datetime")
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")
