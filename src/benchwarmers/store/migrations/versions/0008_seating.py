"""seating that learns: failing models, promotion, the recent verdicts by time

- `models.failures`, `models.failing_since`: calls in a row that failed by
  connection, 5xx or timeout (`calls/health.py`); seating holds such a
  model out until a probe answers, without waiting for the daily probe.
- `collections.promotion`: "auto", "suggest" (the default) or "never":
  whether an explorer's find that is clearly better than a record seat
  takes it (`bench/decider.py`).
- `ix_verdicts_alias_at`: forgetting reads the bench models' verdicts of
  the recent window one by one (their age and order), a range of this
  index per model however long the log.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04 10:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("models") as table:
        table.add_column(sa.Column("failures", sa.Integer(), server_default="0", nullable=False))
        table.add_column(sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("collections") as table:
        table.add_column(
            sa.Column("promotion", sa.String(length=8), server_default="suggest", nullable=False)
        )
    op.create_index("ix_verdicts_alias_at", "verdicts", ["alias", "at"])


def downgrade() -> None:
    op.drop_index("ix_verdicts_alias_at", table_name="verdicts")
    with op.batch_alter_table("collections") as table:
        table.drop_column("promotion")
    with op.batch_alter_table("models") as table:
        table.drop_column("failing_since")
        table.drop_column("failures")
