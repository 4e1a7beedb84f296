"""a server's leaderboards on the web

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06

`guild_settings.board_public`: the server's admins put its leaderboards on a public web
page (`tutor web`); off by default, as a server's activity is its own.
"""

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('board_public', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('board_public')
