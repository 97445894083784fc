"""Profiles: Proton and Nsight Compute files uploaded with a run, and their kernels' metrics.

`profiles`: one row per profile file (tool, mode, the metrics it holds with their units).
`profile_kernels`: one row per kernel of a profile: launches, time, totals per metric, the
compilation it joins (by cache hash, launch facts or name) and, zlib-compressed JSON, its metrics
per source line, per IR line and per SASS instruction. Runs ingested before have none.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "profiles",
        sa.Column("pk", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("path", sa.String(1000), nullable=False),
        sa.Column("tool", sa.String(16), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("devices", sa.JSON(), nullable=True),
        sa.Column("notes", sa.JSON(), nullable=False),
    )
    op.create_index("ix_profiles_run_id", "profiles", ["run_id"])
    op.create_table(
        "profile_kernels",
        sa.Column("pk", sa.Integer(), primary_key=True),
        sa.Column("profile_pk", sa.Integer(), sa.ForeignKey("profiles.pk", ondelete="CASCADE"), nullable=False),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(1000), nullable=False),
        sa.Column("base", sa.String(500), nullable=False),
        sa.Column("count", sa.Integer(), nullable=True),
        sa.Column("time_ns", sa.Float(), nullable=True),
        sa.Column("compilation_pk", sa.Integer(), sa.ForeignKey("compilations.pk", ondelete="SET NULL"), nullable=True),
        sa.Column("candidates", sa.JSON(), nullable=False),
        sa.Column("joined_by", sa.String(32), nullable=True),
        sa.Column("totals", sa.JSON(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_index("ix_profile_kernels_profile_pk", "profile_kernels", ["profile_pk"])
    op.create_index("ix_profile_kernels_run_id", "profile_kernels", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_profile_kernels_run_id", "profile_kernels")
    op.drop_index("ix_profile_kernels_profile_pk", "profile_kernels")
    op.drop_table("profile_kernels")
    op.drop_index("ix_profiles_run_id", "profiles")
    op.drop_table("profiles")
