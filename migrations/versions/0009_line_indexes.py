"""Line indexes: each blob's Python-line index for the map page, computed at ingest.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Runs ingested before have no rows: the map page computes and stores them on first visit.
    op.create_table(
        "line_indexes",
        sa.Column("blob", sa.String(64), primary_key=True),
        sa.Column("context", sa.String(80), primary_key=True),
        sa.Column("flags", sa.Integer(), nullable=False),
        sa.Column("files", sa.Text(), nullable=False),
        sa.Column("lines", sa.LargeBinary(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("line_indexes")
