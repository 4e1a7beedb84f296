"""FSRS beside SM-2, remediation, misconceptions

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

Existing cards get their FSRS state by replaying their review log (scheduler/replay.py),
the same derivation a later check can repeat.
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scheduler', sqlmodel.sql.sqltypes.AutoString(length=8),
                                      nullable=True))
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scheduler', sqlmodel.sql.sqltypes.AutoString(length=8),
                                      nullable=True))
        batch_op.add_column(sa.Column('remediation', sa.Boolean(), nullable=True))
    with op.batch_alter_table('card_state', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fsrs_stability', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('fsrs_difficulty', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('fsrs_due_day', sa.Date(), nullable=True))
        batch_op.add_column(sa.Column('remedy_day', sa.Date(), nullable=True))
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scheduler', sqlmodel.sql.sqltypes.AutoString(length=8),
                                      server_default='sm2', nullable=False))
        batch_op.add_column(sa.Column('restart', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
    op.create_table('misconception',
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('mistake_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('open', sa.Boolean(), nullable=False),
    sa.Column('times_shown', sa.Integer(), nullable=False),
    sa.Column('first_shown_at', sa.DateTime(), nullable=False),
    sa.Column('last_shown_at', sa.DateTime(), nullable=False),
    sa.Column('last_corrected_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('learner_id', 'deck_id', 'mistake_id')
    )
    from scheduler.replay import backfill_fsrs
    backfill_fsrs(op.get_bind())


def downgrade() -> None:
    op.drop_table('misconception')
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_column('restart')
        batch_op.drop_column('scheduler')
    with op.batch_alter_table('card_state', schema=None) as batch_op:
        batch_op.drop_column('remedy_day')
        batch_op.drop_column('fsrs_due_day')
        batch_op.drop_column('fsrs_difficulty')
        batch_op.drop_column('fsrs_stability')
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('remediation')
        batch_op.drop_column('scheduler')
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_column('scheduler')
