"""reminders and streaks

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op



revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reminder_min_due', sa.Integer(), nullable=False, server_default='1'))
        batch_op.add_column(sa.Column('quiet_start', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('quiet_end', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('reminders_ignored', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('last_reminder_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('reminder_claim', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True))
        batch_op.add_column(sa.Column('reminder_claimed_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('unreachable', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('daily_minimum', sa.Integer(), nullable=False, server_default='1'))
        batch_op.add_column(sa.Column('day_reviews', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('day_reviews_day', sa.Date(), nullable=True))
        batch_op.add_column(sa.Column('streak', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('longest_streak', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('streak_day', sa.Date(), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_column('streak_day')
        batch_op.drop_column('longest_streak')
        batch_op.drop_column('streak')
        batch_op.drop_column('day_reviews_day')
        batch_op.drop_column('day_reviews')
        batch_op.drop_column('daily_minimum')
        batch_op.drop_column('unreachable')
        batch_op.drop_column('reminder_claimed_at')
        batch_op.drop_column('reminder_claim')
        batch_op.drop_column('last_reminder_at')
        batch_op.drop_column('reminders_ignored')
        batch_op.drop_column('quiet_end')
        batch_op.drop_column('quiet_start')
        batch_op.drop_column('reminder_min_due')

