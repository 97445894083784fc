"""Adjacent diffs: the packed segments of large adjacent snapshot pairs, stored in the background.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Runs stored before have no rows: their diffs are computed on visit until they are prepared.
    op.create_table(
        "adjacent_diffs",
        sa.Column("a_blob", sa.LargeBinary(), primary_key=True),
        sa.Column("b_blob", sa.LargeBinary(), primary_key=True),
        sa.Column("version", sa.String(16), nullable=False),
        sa.Column("segments", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("adjacent_diffs")
