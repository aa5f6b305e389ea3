"""calls.blind: an ask the Ask page's toggle made blind (or not) against its collection

The Ask page's Blind toggle changes one ask from its collection's setting.
Nothing stored that choice, so Recent asks showed an ask asked blind in a
collection that is not blind with its models' names at once, before it was
judged (and hid an ask asked with names in a blind one). Its calls now say
so: true (asked blind), false (asked with names), null (as its collection
says: every other ask, and every call logged before).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 20:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("calls") as table:
        table.add_column(sa.Column("blind", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("calls") as table:
        table.drop_column("blind")
