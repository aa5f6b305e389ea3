"""judge verdicts: a collection may have a judge model compare its panels' answers

- `collections.judge_verdicts`: after each panel ask with two or more
  answered seats, a model that did not sit compares the seats (blind) and
  its judgement is stored as pair verdicts of kind "judge"
  (`panel/judge.py`); off by default. The rating weighs those by how often
  they agreed with people's on the same pairs (`bench/pairs.py`).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 13:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.add_column(sa.Column("judge_verdicts", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.drop_column("judge_verdicts")
