"""verdict tallies: ranking's counts kept as verdicts are written

Ranking read every verdict of the bench's models to count them per
collection, shape and usefulness (`GROUP BY` over `ix_verdicts_tally`,
once per cache refresh): 1.8 ms with no past calls, 10.9 ms at 300,000
calls with one in 20 judged, and growing with every verdict. The counts
now live in `verdict_tallies`, updated in each verdict's transaction, so
the read is a row per group; `ix_verdicts_tally` served only that read and
is dropped (one index fewer to write per verdict). The table starts from
the verdicts already there.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "verdict_tallies",
        sa.Column("alias", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("collection", sa.String(length=64), nullable=False),
        sa.Column("shape", sa.String(length=32), nullable=False),
        sa.Column("useful", sa.Boolean(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "alias", "kind", "collection", "shape", "useful", name=op.f("pk_verdict_tallies")
        ),
    )
    op.execute(
        "INSERT INTO verdict_tallies (alias, kind, collection, shape, useful, count) "
        "SELECT alias, kind, collection, shape, useful, count(*) FROM verdicts "
        "GROUP BY alias, kind, collection, shape, useful"
    )
    op.drop_index("ix_verdicts_tally", table_name="verdicts")


def downgrade() -> None:
    op.create_index(
        "ix_verdicts_tally", "verdicts", ["alias", "kind", "collection", "shape", "useful"], unique=False
    )
    op.drop_table("verdict_tallies")
