"""a server's decks as rows

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

The JSON list `guild_settings.decks` was read, changed and written whole, so concurrent
changes lost each other (issue 25). Each deck a server plays is now a `guild_deck` row.
A NULL list meant "the default decks" (every bundled deck): that is `decks_chosen` false,
with no rows; a list becomes `decks_chosen` true and one row per id.
"""

import json

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

_settings = sa.table('guild_settings', sa.column('guild_id', sa.BigInteger),
                     sa.column('decks', sa.JSON), sa.column('decks_chosen', sa.Boolean))
_rows = sa.table('guild_deck', sa.column('guild_id', sa.BigInteger),
                 sa.column('deck_id', sa.String))


def upgrade() -> None:
    op.create_table('guild_deck',
    sa.Column('guild_id', sa.BigInteger(), nullable=False),
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.PrimaryKeyConstraint('guild_id', 'deck_id')
    )
    with op.batch_alter_table('guild_deck', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_guild_deck_deck_id'), ['deck_id'], unique=False)
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('decks_chosen', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
    conn = op.get_bind()
    chosen = conn.execute(sa.select(_settings.c.guild_id, _settings.c.decks)
                          .where(_settings.c.decks.is_not(None))).all()
    for guild_id, decks in chosen:
        ids = json.loads(decks) if isinstance(decks, str) else decks
        ids = [d for d in dict.fromkeys(ids or []) if isinstance(d, str)]
        if not ids:  # an empty list played the default decks (the engine's fallback)
            continue
        conn.execute(_rows.insert(), [{'guild_id': guild_id, 'deck_id': d} for d in ids])
        conn.execute(_settings.update().where(_settings.c.guild_id == guild_id)
                     .values(decks_chosen=True))
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('decks')


def downgrade() -> None:
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('decks', sa.JSON(), nullable=True))
    conn = op.get_bind()
    chosen = conn.execute(sa.select(_settings.c.guild_id)
                          .where(_settings.c.decks_chosen)).scalars().all()
    for guild_id in chosen:
        ids = conn.execute(sa.select(_rows.c.deck_id).where(_rows.c.guild_id == guild_id)
                           .order_by(_rows.c.deck_id)).scalars().all()
        conn.execute(_settings.update().where(_settings.c.guild_id == guild_id)
                     .values(decks=ids or None))
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('decks_chosen')
    with op.batch_alter_table('guild_deck', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_guild_deck_deck_id'))
    op.drop_table('guild_deck')
