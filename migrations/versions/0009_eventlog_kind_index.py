"""an index on the log's events by game and kind

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 09:00:00

The game page heads its log with the beginning of every round: the events of one kind
among all of a game's (thousands in a long game), found through this index instead of
reading every event of the game.
"""
from typing import Sequence, Union

from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('eventlog', schema=None) as batch_op:
        batch_op.create_index('ix_eventlog_game_kind', ['game_id', 'kind', 'seq'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('eventlog', schema=None) as batch_op:
        batch_op.drop_index('ix_eventlog_game_kind')
