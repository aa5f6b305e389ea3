"""money: what each call cost, at the price of its time

- `model_prices`: a model's prices from the moment each took effect (a
  catalog refresh or the user's override), so a price change costs later
  calls at the new price and leaves earlier ones at theirs.
- `models.price_cached` (USD per million cached input tokens; None: the
  input price), `models.price_source` ("catalog" or "user": a refresh leaves
  the user's prices), `models.went_paid_at` (a free model the catalog found
  priced: `free_only` collections seat it nowhere until the user accepts).
- `calls.tokens_cached`, `calls.cost_usd` (None: the price was unknown),
  `calls.gateway_key` (spend per key).
- `usage_ledger.cost_usd`, `usage_ledger.unpriced` (calls whose price was
  unknown).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 13:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_prices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("alias", sa.String(length=128), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("price_in", sa.Float(), nullable=True),
        sa.Column("price_out", sa.Float(), nullable=True),
        sa.Column("price_cached", sa.Float(), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_model_prices_alias_at", "model_prices", ["alias", "at"])
    with op.batch_alter_table("models") as table:
        table.add_column(sa.Column("price_cached", sa.Float(), nullable=True))
        table.add_column(
            sa.Column("price_source", sa.String(length=8), server_default="catalog", nullable=False)
        )
        table.add_column(sa.Column("went_paid_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("calls") as table:
        table.add_column(sa.Column("tokens_cached", sa.Integer(), server_default="0", nullable=False))
        table.add_column(sa.Column("cost_usd", sa.Float(), nullable=True))
        table.add_column(sa.Column("gateway_key", sa.String(length=64), server_default="", nullable=False))
    with op.batch_alter_table("usage_ledger") as table:
        table.add_column(sa.Column("cost_usd", sa.Float(), server_default="0", nullable=False))
        table.add_column(sa.Column("unpriced", sa.Integer(), server_default="0", nullable=False))
    # Prices in effect now, dated from the model's creation: calls before this revision
    # were not costed, and later changes are dated as they happen.
    op.execute(
        "INSERT INTO model_prices (alias, at, price_in, price_out, price_cached, source)"
        " SELECT alias, created_at, price_in, price_out, NULL, 'catalog' FROM models"
    )


def downgrade() -> None:
    with op.batch_alter_table("usage_ledger") as table:
        table.drop_column("unpriced")
        table.drop_column("cost_usd")
    with op.batch_alter_table("calls") as table:
        table.drop_column("gateway_key")
        table.drop_column("cost_usd")
        table.drop_column("tokens_cached")
    with op.batch_alter_table("models") as table:
        table.drop_column("went_paid_at")
        table.drop_column("price_source")
        table.drop_column("price_cached")
    op.drop_index("ix_model_prices_alias_at", table_name="model_prices")
    op.drop_table("model_prices")
