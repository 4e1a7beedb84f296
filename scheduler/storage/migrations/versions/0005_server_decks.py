"""per-server decks

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op



revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('decks', sa.JSON(), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('decks')

