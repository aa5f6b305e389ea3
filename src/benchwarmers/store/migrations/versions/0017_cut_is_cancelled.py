"""a seat cut at a quorum or deadline is `cancelled`, as the SPEC's words say

The SPEC's seat statuses have one word for a seat that did not finish
because someone or something stopped it: `cancelled` ("stopped by the
caller or cut at a quorum or deadline"). Revision 0012 logged a cut seat
under a status of its own, `cut`; a reader of the SPEC filtering the call
log for `cancelled` missed them. The rows move to `cancelled`, and their
error keeps what told a cut apart: it now starts `cut: ` and says why, as a
newly cut call's does.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 10:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("UPDATE calls SET status = 'cancelled', error = 'cut: ' || error WHERE status = 'cut'")


def downgrade() -> None:
    op.execute(
        "UPDATE calls SET status = 'cut', error = substr(error, 6) "
        "WHERE status = 'cancelled' AND error LIKE 'cut: %'"
    )
