"""a seat held by a bot from the game's creation

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 10:40:00

``seat.robot``: the host seated a bot at creation (``seat.bot`` is its level); it has no
address, is never mailed, and the clock plays its moves.
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: Union[str, Sequence[str], None] = '0011'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('seat', schema=None) as batch_op:
        batch_op.add_column(sa.Column('robot', sa.Boolean(), server_default='0',
                                      nullable=False))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('seat', schema=None) as batch_op:
        batch_op.drop_column('robot')
