"""a served card's hint counts among its moves

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04

`served_card.attempts` is the version every click's compare-and-set guards: a card's
attempts and free code retries, and now its hint, so that no click judged on the state
before a hint is stored over it (a click may be judged on the state a process kept from
its last click, `bot.engine.served_cards`). Unfinished cards whose hint is already shown
count it; finished ones are never written again.
"""

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

_served = sa.table('served_card', sa.column('serve_id', sa.String),
                   sa.column('served', sa.JSON), sa.column('attempts', sa.Integer),
                   sa.column('finished', sa.Boolean))


def _shift_hinted(by: int) -> None:
    conn = op.get_bind()
    hinted = [row.serve_id for row in conn.execute(
        sa.select(_served.c.serve_id, _served.c.served).where(_served.c.finished.is_(False)))
        if (row.served or {}).get('hint_used')]
    for serve_id in hinted:
        conn.execute(_served.update().where(_served.c.serve_id == serve_id)
                     .values(attempts=_served.c.attempts + by))


def upgrade() -> None:
    _shift_hinted(1)


def downgrade() -> None:
    _shift_hinted(-1)
