"""Kernel history: run labels, and one summary row per compilation for a kernel's history.

`runs.labels` (JSON, NULL for runs stored before): {"triton": "3.7.1", "commit": "abc123", ...}.
`runs.points_version`: the version of the run's kernel_points rows; NULL until they are written (after
ingest: in the server's background round, or by the first history page or check that needs them).
`kernel_points`: per compilation, the numbers the history pages and `irlens check` read
(registers, spill bytes, time, ...), written once per run (app/insight/kernel_points.py), for runs
stored before this revision too. `history_generation`: one row whose
value goes up with every change to what the list of kernels shows (app/store/generation.py).

Revision ID: 0019_i34
Revises: 0018
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_i34"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("labels", sa.JSON(), nullable=True))
    op.add_column("runs", sa.Column("points_version", sa.Integer(), nullable=True))
    op.create_index("ix_runs_points_version", "runs", ["points_version"])
    op.create_table(
        "kernel_points",
        sa.Column("compilation_pk", sa.Integer(), sa.ForeignKey("compilations.pk", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kernel", sa.String(500), nullable=False),
        sa.Column("target", sa.String(100), nullable=True),
        sa.Column("series", sa.String(1000), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("triton_version", sa.String(50), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("registers", sa.Integer(), nullable=True),
        sa.Column("spill_bytes", sa.Integer(), nullable=True),
        sa.Column("shared_bytes", sa.Integer(), nullable=True),
        sa.Column("occupancy", sa.Float(), nullable=True),
        sa.Column("time_ns", sa.Float(), nullable=True),
        sa.Column("autotune_ms", sa.Float(), nullable=True),
        sa.Column("picked", sa.Boolean(), nullable=True),
        sa.Column("passes_changed", sa.Integer(), nullable=True),
        sa.Column("ir_lines", sa.JSON(), nullable=False),
        sa.Column("ops", sa.JSON(), nullable=False),
    )
    op.create_index("ix_kernel_points_run_id", "kernel_points", ["run_id"])
    generation = op.create_table(
        "history_generation",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("value", sa.Integer(), nullable=False),
    )
    op.bulk_insert(generation, [{"id": 1, "value": 0}])
    op.create_index("ix_kernel_points_kernel_created", "kernel_points", ["kernel", "created_at", "run_id"])


def downgrade() -> None:
    op.drop_table("history_generation")
    op.drop_index("ix_kernel_points_kernel_created", "kernel_points")
    op.drop_index("ix_kernel_points_run_id", "kernel_points")
    op.drop_table("kernel_points")
    op.drop_index("ix_runs_points_version", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("points_version")
        batch.drop_column("labels")
