"""Alembic environment: runs on the connection `scheduler.storage.db.upgrade` hands over."""

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

from scheduler.storage.models import UTCDateTime  # importing registers the tables

config = context.config
target_metadata = SQLModel.metadata


def _render_item(kind, obj, _context):
    # Migrations stay importable whatever happens to the models module.
    if kind == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime()"
    return False


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        render_item=_render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    engine = engine_from_config(
        config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as conn:
        _run(conn)
