"""budgets: spending ceilings per gateway key, collection and install

- `budgets`: a ceiling per scope ("key", "collection", "install"), name and
  calendar period ("day", "week", "month"), in USD and/or tokens.
- `budget_spend`: what was spent per scope, name and UTC day (USD in
  nano-dollars, tokens), read back when a process starts counting a period.
- `collections.budget_seating`: "cheapest" (the default) or "record": which
  seats a budget that cannot pay for every seat keeps.

Revision ID: 0015
Revises: 0013
Create Date: 2026-12-04 13:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "budgets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("usd", sa.Float(), nullable=True),
        sa.Column("tokens", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budgets")),
        sa.UniqueConstraint("scope", "name", "period", name=op.f("uq_budgets_scope_name_period")),
    )
    op.create_table(
        "budget_spend",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("nano_usd", sa.BigInteger(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budget_spend")),
        sa.UniqueConstraint("scope", "name", "day", name=op.f("uq_budget_spend_scope_name_day")),
    )
    with op.batch_alter_table("collections") as table:
        table.add_column(
            sa.Column("budget_seating", sa.String(length=8), server_default="cheapest", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.drop_column("budget_seating")
    op.drop_table("budget_spend")
    op.drop_table("budgets")
