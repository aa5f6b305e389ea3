"""judging: pair verdicts, and the text a collection chooses to keep

A person comparing a panel's answers says which of two was better (or a
tie, or both bad): `pair_verdicts` holds one row per unordered pair of
calls and kind of judge, with the models behind them copied so the rating
reads pairs without the call log. A collection may keep the question and
the answers of its asks for `keep_days` (`keep_text`, off by default), so
they can be read and judged later: `kept_texts`, swept when they expire or
the collection goes.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04 10:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pair_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("ask_id", sa.String(length=40), nullable=False),
        sa.Column("pair_key", sa.String(length=90), nullable=False),
        sa.Column("better_call", sa.String(length=40), nullable=False),
        sa.Column("worse_call", sa.String(length=40), nullable=False),
        sa.Column("better_alias", sa.String(length=128), nullable=False),
        sa.Column("worse_alias", sa.String(length=128), nullable=False),
        sa.Column("outcome", sa.String(length=12), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("collection", sa.String(length=64), nullable=False),
        sa.Column("shape", sa.String(length=32), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["better_call"],
            ["calls.id"],
            name=op.f("fk_pair_verdicts_better_call_calls"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["worse_call"], ["calls.id"], name=op.f("fk_pair_verdicts_worse_call_calls"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pair_verdicts")),
        sa.UniqueConstraint("pair_key", "kind", name=op.f("uq_pair_verdicts_pair_key_kind")),
    )
    op.create_index(op.f("ix_pair_verdicts_ask_id"), "pair_verdicts", ["ask_id"], unique=False)
    op.create_index("ix_pair_verdicts_collection", "pair_verdicts", ["collection", "shape"], unique=False)
    op.create_table(
        "kept_texts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("ask_id", sa.String(length=40), nullable=False),
        sa.Column("collection", sa.String(length=64), nullable=False),
        sa.Column("question", sa.JSON(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kept_texts")),
    )
    op.create_index(op.f("ix_kept_texts_ask_id"), "kept_texts", ["ask_id"], unique=False)
    op.create_index(op.f("ix_kept_texts_collection"), "kept_texts", ["collection"], unique=False)
    op.create_index(op.f("ix_kept_texts_expires_at"), "kept_texts", ["expires_at"], unique=False)
    with op.batch_alter_table("collections") as table:
        table.add_column(sa.Column("keep_text", sa.Boolean(), server_default=sa.false(), nullable=False))
        table.add_column(sa.Column("keep_days", sa.Integer(), server_default="30", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("collections") as table:
        table.drop_column("keep_days")
        table.drop_column("keep_text")
    op.drop_index(op.f("ix_kept_texts_expires_at"), table_name="kept_texts")
    op.drop_index(op.f("ix_kept_texts_collection"), table_name="kept_texts")
    op.drop_index(op.f("ix_kept_texts_ask_id"), table_name="kept_texts")
    op.drop_table("kept_texts")
    op.drop_index("ix_pair_verdicts_collection", table_name="pair_verdicts")
    op.drop_index(op.f("ix_pair_verdicts_ask_id"), table_name="pair_verdicts")
    op.drop_table("pair_verdicts")
