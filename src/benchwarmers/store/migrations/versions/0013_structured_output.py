"""structured output: what each model can do, and what a collection does with one that cannot

- `models.structured_output`: whether the model answers in JSON (against a
  schema) when its API is asked to; null = unknown (asked natively). The
  catalog fills it where models.dev says; the user may set it.
- `collections.output_fallback`: "leave_off" (the default: a member that
  cannot is left off an ask for structured output, with the reason) or
  "prompt" (it is asked with the schema in its system prompt instead).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 13:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("models") as table:
        table.add_column(sa.Column("structured_output", sa.Boolean(), nullable=True))
    with op.batch_alter_table("collections") as table:
        table.add_column(
            sa.Column("output_fallback", sa.String(length=16), server_default="leave_off", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.drop_column("output_fallback")
    with op.batch_alter_table("models") as table:
        table.drop_column("structured_output")
