"""take-backs: the state before a player's last move, and what each move showed

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 11:00:00

``game.undo_state``: the engine state before the last move a player made (kept while
only bots moved after it, cleared by a timeout); ``move.version`` and ``move.event_seq``:
the game's version and last event before the move; ``move.revealed``: whether the move
showed anything hidden (a die, a card). A player may take back their last move while
nothing since showed anything hidden and no other person acted (services.takeback).
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('undo_state', sa.Text(), nullable=True))
    with op.batch_alter_table('move', schema=None) as batch_op:
        batch_op.add_column(sa.Column('version', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('event_seq', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('revealed', sa.Boolean(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('move', schema=None) as batch_op:
        batch_op.drop_column('revealed')
        batch_op.drop_column('event_seq')
        batch_op.drop_column('version')
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_column('undo_state')
