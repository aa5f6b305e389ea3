"""gateway keys that expire and rotate

- `gateway_keys.expires_at`: when the key stops working (the owner's
  `key add --expires` / `key set --expires`); NULL: never.
- `gateway_keys.rotated_at`: on the row of a secret replaced by `key rotate`
  (its `revoked_at` is then the end of its grace period), so a refusal can
  say "replaced" rather than "revoked".

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 13:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("gateway_keys") as table:
        table.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        table.add_column(sa.Column("rotated_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gateway_keys") as table:
        table.drop_column("rotated_at")
        table.drop_column("expires_at")
