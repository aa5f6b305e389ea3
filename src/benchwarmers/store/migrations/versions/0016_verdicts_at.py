"""verdicts by time: the bench's newest verdicts without sorting the window

- `ix_verdicts_at`: forgetting reads the bench's newest verdicts of the
  recent window, newest first, up to a fixed number (`evidence.RECENT_CAP`).
  Down `ix_verdicts_alias_at` that read gathered every verdict of the window
  model by model and sorted them all to keep the newest (with 300k calls
  behind a bench, ~20k verdicts sorted on every refresh of the cache); down
  this index it reads the newest and stops at the last one it keeps.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 16:30:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_verdicts_at", "verdicts", ["at"])


def downgrade() -> None:
    op.drop_index("ix_verdicts_at", table_name="verdicts")
