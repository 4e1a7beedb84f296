"""served cards and guild settings

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op



revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('guild_settings',
    sa.Column('guild_id', sa.BigInteger(), nullable=False),
    sa.Column('public_play', sa.Boolean(), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('reminder_channel_id', sa.BigInteger(), nullable=True),
    sa.PrimaryKeyConstraint('guild_id')
    )
    op.create_table('served_card',
    sa.Column('serve_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('served', sa.JSON(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('draft', sa.JSON(), nullable=False),
    sa.Column('finished', sa.Boolean(), nullable=False),
    sa.Column('served_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('serve_id')
    )
    with op.batch_alter_table('served_card', schema=None) as batch_op:
        batch_op.create_index('ix_served_card_learner', ['learner_id', 'served_at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('served_card', schema=None) as batch_op:
        batch_op.drop_index('ix_served_card_learner')

    op.drop_table('served_card')
    op.drop_table('guild_settings')
