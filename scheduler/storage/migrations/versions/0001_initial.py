"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op



revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('learner',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('external_id', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('rollover_hour', sa.Integer(), nullable=False),
    sa.Column('new_per_day', sa.Integer(), nullable=False),
    sa.Column('reminders_enabled', sa.Boolean(), nullable=False),
    sa.Column('reminder_hour', sa.Integer(), nullable=False),
    sa.Column('next_reminder_at', sa.DateTime(), nullable=True),
    sa.Column('leaderboard_visible', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('external_id')
    )
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_learner_next_reminder_at'), ['next_reminder_at'], unique=False)

    op.create_table('card_state',
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('card_id', sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('card_rev', sa.Integer(), nullable=False),
    sa.Column('ef100', sa.Integer(), nullable=False),
    sa.Column('repetitions', sa.Integer(), nullable=False),
    sa.Column('interval', sa.Integer(), nullable=False),
    sa.Column('due_day', sa.Date(), nullable=False),
    sa.Column('lapses', sa.Integer(), nullable=False),
    sa.Column('review_count', sa.Integer(), nullable=False),
    sa.Column('drill_pending', sa.Boolean(), nullable=False),
    sa.Column('last_review_day', sa.Date(), nullable=True),
    sa.Column('last_reviewed_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('learner_id', 'card_id')
    )
    with op.batch_alter_table('card_state', schema=None) as batch_op:
        batch_op.create_index('ix_card_state_due', ['learner_id', 'due_day'], unique=False)

    op.create_table('guild_member',
    sa.Column('guild_id', sa.BigInteger(), nullable=False),
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('first_seen_at', sa.DateTime(), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('guild_id', 'learner_id')
    )
    op.create_table('review_log',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('answer_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('card_id', sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('card_rev', sa.Integer(), nullable=False),
    sa.Column('guild_id', sa.BigInteger(), nullable=True),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('reviewed_at', sa.DateTime(), nullable=False),
    sa.Column('study_day', sa.Date(), nullable=False),
    sa.Column('quality', sa.Integer(), nullable=False),
    sa.Column('correct', sa.Boolean(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('hint_used', sa.Boolean(), nullable=False),
    sa.Column('latency_ms', sa.Integer(), nullable=False),
    sa.Column('chosen', sa.JSON(), nullable=False),
    sa.Column('mistake_ids', sa.JSON(), nullable=False),
    sa.Column('ef100_after', sa.Integer(), nullable=False),
    sa.Column('interval_after', sa.Integer(), nullable=False),
    sa.Column('due_day_after', sa.Date(), nullable=False),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('answer_id')
    )
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.create_index('ix_review_log_guild_time', ['guild_id', 'reviewed_at'], unique=False)
        batch_op.create_index('ix_review_log_learner_time', ['learner_id', 'reviewed_at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_index('ix_review_log_learner_time')
        batch_op.drop_index('ix_review_log_guild_time')

    op.drop_table('review_log')
    op.drop_table('guild_member')
    with op.batch_alter_table('card_state', schema=None) as batch_op:
        batch_op.drop_index('ix_card_state_due')

    op.drop_table('card_state')
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_learner_next_reminder_at'))

    op.drop_table('learner')
