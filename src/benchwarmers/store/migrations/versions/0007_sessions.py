"""dashboard sessions: a login ends when the owner says so

A dashboard session was a signed cookie with nothing behind it: logout only
asked the browser to forget it, so a copy made before logout still opened
the dashboard for its 12 hours. Each session is now a row (the hash of the
cookie's random token); logout, a password change and "sign out everywhere"
delete rows, and a cookie without its row opens nothing.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 10:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_dashboard_sessions")),
    )
    op.create_index(
        op.f("ix_dashboard_sessions_expires_at"), "dashboard_sessions", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_dashboard_sessions_expires_at"), table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
