"""quorum and deadline per collection: a panel that answers without its slower seats

- `collections.quorum`: answer once this many seats answered `ok` (0: every seat).
- `collections.deadline`: answer with what is in this many seconds after the
  seats were sent (0: no deadline).
- `collections.on_cut`: the seats still answering then are cancelled and
  logged `cut` ("cancel"), or left to finish in the background and logged
  with their real outcome ("finish") (`panel/quorum.py`).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 13:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.add_column(sa.Column("quorum", sa.Integer(), server_default="0", nullable=False))
        table.add_column(sa.Column("deadline", sa.Float(), server_default="0", nullable=False))
        table.add_column(sa.Column("on_cut", sa.String(length=8), server_default="cancel", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.drop_column("on_cut")
        table.drop_column("deadline")
        table.drop_column("quorum")
