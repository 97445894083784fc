"""Initial schema: the tables as irlens first shipped them (before Alembic, made by create_all).

Revision ID: 0001
Revises:
Create Date: 2025-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("pk"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "blobs",
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("codec", sa.String(length=8), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("hash"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("input_bytes", sa.Integer(), nullable=False),
        sa.Column("damaged", sa.Integer(), nullable=False),
        sa.Column("stats", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "compilations",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("kernel", sa.String(length=500), nullable=True),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("log_name", sa.String(length=1000), nullable=True),
        sa.Column("first_line", sa.Integer(), nullable=True),
        sa.Column("target", sa.String(length=100), nullable=True),
        sa.Column("triton_version", sa.String(length=50), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=True),
        sa.Column("num_warps", sa.Integer(), nullable=True),
        sa.Column("num_stages", sa.Integer(), nullable=True),
        sa.Column("num_ctas", sa.Integer(), nullable=True),
        sa.Column("shared", sa.Integer(), nullable=True),
        sa.Column("cache_key", sa.String(length=1000), nullable=True),
        sa.Column("cache_match", sa.String(length=16), nullable=True),
        sa.Column("compile_seconds", sa.Float(), nullable=True),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("changed", sa.Integer(), nullable=False),
        sa.Column("metadata_json", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_compilation_run_ordinal", "compilations", ["run_id", "ordinal"], unique=True)
    op.create_index("ix_compilations_run_id", "compilations", ["run_id"], unique=False)
    op.create_table(
        "inputs",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("size", sa.Integer(), nullable=True),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("log_blob", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["log_blob"],
            ["blobs.hash"],
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_inputs_run_id", "inputs", ["run_id"], unique=False)
    op.create_table(
        "problems",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=True),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("header", sa.Text(), nullable=True),
        sa.Column("blob", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["blob"],
            ["blobs.hash"],
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_problems_run_id", "problems", ["run_id"], unique=False)
    op.create_table(
        "sources",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("blob", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["blob"],
            ["blobs.hash"],
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_sources_run_id", "sources", ["run_id"], unique=False)
    op.create_table(
        "artifacts",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("compilation_pk", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("blob", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["blob"],
            ["blobs.hash"],
        ),
        sa.ForeignKeyConstraint(["compilation_pk"], ["compilations.pk"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_artifacts_compilation_pk", "artifacts", ["compilation_pk"], unique=False)
    op.create_table(
        "diagnostics",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("compilation_pk", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("file", sa.String(length=1000), nullable=True),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("col", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("log_name", sa.String(length=1000), nullable=True),
        sa.Column("log_line", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["compilation_pk"], ["compilations.pk"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_diagnostics_run_id", "diagnostics", ["run_id"], unique=False)
    op.create_table(
        "snapshots",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("compilation_pk", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("when", sa.String(length=8), nullable=False),
        sa.Column("pass_name", sa.String(length=500), nullable=False),
        sa.Column("pass_arg", sa.String(length=500), nullable=True),
        sa.Column("pass_options", sa.Text(), nullable=True),
        sa.Column("scope", sa.Text(), nullable=True),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("changed", sa.Boolean(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("line_count", sa.Integer(), nullable=False),
        sa.Column("blob", sa.String(length=64), nullable=False),
        sa.Column("header", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["blob"],
            ["blobs.hash"],
        ),
        sa.ForeignKeyConstraint(["compilation_pk"], ["compilations.pk"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_snapshot_compilation_index", "snapshots", ["compilation_pk", "index"], unique=True)
    op.create_table(
        "timings",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("compilation_pk", sa.Integer(), nullable=False),
        sa.Column("report", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("wall", sa.Float(), nullable=False),
        sa.Column("percent", sa.Float(), nullable=False),
        sa.Column("analysis", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["compilation_pk"], ["compilations.pk"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("pk"),
    )
    op.create_index("ix_timings_compilation_pk", "timings", ["compilation_pk"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_timings_compilation_pk", table_name="timings")
    op.drop_table("timings")
    op.drop_index("ix_snapshot_compilation_index", table_name="snapshots")
    op.drop_table("snapshots")
    op.drop_index("ix_diagnostics_run_id", table_name="diagnostics")
    op.drop_table("diagnostics")
    op.drop_index("ix_artifacts_compilation_pk", table_name="artifacts")
    op.drop_table("artifacts")
    op.drop_index("ix_sources_run_id", table_name="sources")
    op.drop_table("sources")
    op.drop_index("ix_problems_run_id", table_name="problems")
    op.drop_table("problems")
    op.drop_index("ix_inputs_run_id", table_name="inputs")
    op.drop_table("inputs")
    op.drop_index("ix_compilations_run_id", table_name="compilations")
    op.drop_index("ix_compilation_run_ordinal", table_name="compilations")
    op.drop_table("compilations")
    op.drop_table("runs")
    op.drop_table("blobs")
    op.drop_table("api_tokens")
