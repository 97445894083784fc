"""The op index: term names, and each compilation's first and last snapshot holding a term.

Runs ingested before this revision are indexed by `irlens index --backfill` (with progress); the
search page says how many are still waiting.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "op_terms",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(500), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "compilation_terms",
        sa.Column("term_id", sa.Integer(), nullable=False),
        sa.Column("compilation_pk", sa.Integer(), nullable=False),
        sa.Column("first_index", sa.Integer(), nullable=False),
        sa.Column("last_index", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["term_id"], ["op_terms.id"]),
        sa.ForeignKeyConstraint(["compilation_pk"], ["compilations.pk"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("term_id", "compilation_pk"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_compilation_terms_compilation_pk", "compilation_terms", ["compilation_pk"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_compilation_terms_compilation_pk", table_name="compilation_terms")
    op.drop_table("compilation_terms")
    op.drop_table("op_terms")
