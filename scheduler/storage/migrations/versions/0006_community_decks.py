"""decks uploaded by servers, versioned

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-09
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('community_deck',
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('owner_guild_id', sa.BigInteger(), nullable=False),
    sa.Column('public', sa.Boolean(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('cards', sa.Integer(), nullable=False),
    sa.Column('removed', sa.Boolean(), nullable=False),
    sa.Column('changes', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('deck_id')
    )
    with op.batch_alter_table('community_deck', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_community_deck_owner_guild_id'),
                              ['owner_guild_id'], unique=False)
    op.create_table('community_deck_version',
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('yaml', sa.Text(), nullable=False),
    sa.Column('uploaded_by', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('uploaded_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['deck_id'], ['community_deck.deck_id'], ),
    sa.PrimaryKeyConstraint('deck_id', 'version')
    )


def downgrade() -> None:
    op.drop_table('community_deck_version')
    with op.batch_alter_table('community_deck', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_community_deck_owner_guild_id'))
    op.drop_table('community_deck')
