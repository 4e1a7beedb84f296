"""per-server FSRS parameters, versioned; the review log names the version in force

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06

A server's FSRS parameters may now be fitted to its own reviews (issue 39.1). Each fit is a
`fsrs_parameters` row whose version never changes meaning; the server's settings name the
version in force, and every review row the version it was scheduled with and the card's
FSRS state before it. Every review before this migration was scheduled with py-fsrs's
default parameters: version 0, which the column's default gives them, so old logs replay
as they did. Their state before is not back-filled (NULL: not recorded); replaying needs
only the versions.
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('fsrs_parameters',
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('guild_id', sa.BigInteger(), nullable=False),
    sa.Column('parameters', sa.JSON(), nullable=False),
    sa.Column('reviews', sa.Integer(), nullable=False),
    sa.Column('passed', sa.Boolean(), nullable=False),
    sa.Column('report', sa.JSON(), nullable=False),
    sa.Column('fitted_by', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('applied_at', sa.DateTime(), nullable=True),
    sa.Column('previous_version', sa.Integer(), nullable=True),
    sa.Column('reverted_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('version')
    )
    with op.batch_alter_table('fsrs_parameters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_fsrs_parameters_guild_id'), ['guild_id'],
                              unique=False)
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fsrs_version', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('fit_started_at', sa.DateTime(), nullable=True))
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fsrs_version', sa.Integer(), server_default='0',
                                      nullable=False))
        batch_op.add_column(sa.Column('fsrs_stability_before', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('fsrs_difficulty_before', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('fsrs_last_day_before', sa.Date(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_column('fsrs_last_day_before')
        batch_op.drop_column('fsrs_difficulty_before')
        batch_op.drop_column('fsrs_stability_before')
        batch_op.drop_column('fsrs_version')
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('fit_started_at')
        batch_op.drop_column('fsrs_version')
    with op.batch_alter_table('fsrs_parameters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_fsrs_parameters_guild_id'))
    op.drop_table('fsrs_parameters')
