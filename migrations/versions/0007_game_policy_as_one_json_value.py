"""game policy as one JSON value: the five policy columns of ``game`` become ``policy``

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 22:10:00

Each game's settings are copied into the new column as they were (the same names and
values, the JSON of ``pbem.policy.GamePolicy``), then the old columns are dropped; the
downgrade copies them back.
"""
import json
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TYPES = {"hours_per_decision": sa.Float, "reminder_hours": sa.JSON, "absent_after": sa.Integer,
         "absent_bot": sa.String, "vacation_days": sa.Float}
COLUMNS = tuple(TYPES)


def _game() -> sa.TableClause:
    return sa.table('game', sa.column('id', sa.String), sa.column('policy', sa.JSON),
                    *(sa.column(c, kind) for c, kind in TYPES.items()))


def upgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('policy', sa.JSON(), nullable=True))
    conn = op.get_bind()
    game = _game()
    for row in conn.execute(sa.select(game.c.id, *(game.c[c] for c in COLUMNS))).mappings():
        reminders = row["reminder_hours"]
        if isinstance(reminders, str):  # SQLite hands back JSON text here
            reminders = json.loads(reminders)
        policy = {"hours_per_decision": float(row["hours_per_decision"]),
                  "reminder_hours": [float(h) for h in reminders or []],
                  "absent_after": int(row["absent_after"]), "absent_bot": row["absent_bot"],
                  "vacation_days": float(row["vacation_days"])}
        conn.execute(game.update().where(game.c.id == row["id"]).values(policy=policy))
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.alter_column('policy', existing_type=sa.JSON(), nullable=False)
        for column in COLUMNS:
            batch_op.drop_column(column)


def downgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('hours_per_decision', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('reminder_hours', sa.JSON(), server_default='[]',
                                      nullable=False))
        batch_op.add_column(sa.Column('absent_after', sa.Integer(), server_default='2',
                                      nullable=False))
        batch_op.add_column(sa.Column('absent_bot', sa.String(length=16),
                                      server_default='heuristic', nullable=False))
        batch_op.add_column(sa.Column('vacation_days', sa.Float(), server_default='7',
                                      nullable=False))
    conn = op.get_bind()
    game = _game()
    for row in conn.execute(sa.select(game.c.id, game.c.policy)).mappings():
        policy = row["policy"]
        if isinstance(policy, str):
            policy = json.loads(policy)
        conn.execute(game.update().where(game.c.id == row["id"]).values(
            **{c: policy[c] for c in COLUMNS if c in policy}))
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.alter_column('hours_per_decision', existing_type=sa.Float(), nullable=False)
        batch_op.drop_column('policy')
