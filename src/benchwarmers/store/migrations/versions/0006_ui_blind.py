"""collections.blind: the Ask page hides a collection's model names until judged

A person's verdicts follow brands when the names show (LMArena hides them
until the vote for this reason). A blind collection's panels are shown on
the Ask page as "Seat A/B/C" in a shuffled order, each model named once the
person has judged; off by default, so every collection shows as before.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04 10:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.add_column(sa.Column("blind", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.drop_column("blind")
