"""leaderboard settings, seasons and a covering index for boards

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op



revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('week_start', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('season', sa.Integer(), nullable=False, server_default='1'))
        batch_op.add_column(sa.Column('season_started_at', sa.DateTime(), nullable=True))
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_index('ix_review_log_guild_time')
        batch_op.create_index('ix_review_log_guild_board', ['guild_id', 'reviewed_at',
                              'learner_id', 'kind', 'correct', 'attempts', 'hint_used'],
                              unique=False)



def downgrade() -> None:
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_index('ix_review_log_guild_board')
        batch_op.create_index('ix_review_log_guild_time', ['guild_id', 'reviewed_at'],
                              unique=False)
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('season_started_at')
        batch_op.drop_column('season')
        batch_op.drop_column('week_start')

