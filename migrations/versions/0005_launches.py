"""Launches: one row per kernel launch read from a tritonparse trace (grid, arguments, settings).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "launches",
        sa.Column("pk", sa.Integer(), primary_key=True),
        sa.Column("compilation_pk", sa.Integer(), sa.ForeignKey("compilations.pk", ondelete="CASCADE"), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("grid", sa.JSON(), nullable=True),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("benchmark", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_launch_compilation_index", "launches", ["compilation_pk", "index"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_launch_compilation_index", table_name="launches")
    op.drop_table("launches")
