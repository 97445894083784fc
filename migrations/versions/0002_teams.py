"""Teams: runs get a `listed` flag; indexes for the home list, owners, retention and blob collection.

Revision ID: 0002
Revises: 0001
Create Date: 2025-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Every column that refers to a blob: deleting a run asks each of them "does anyone else use this blob?".
BLOB_REFERENCES = (
    ("snapshots", "blob"),
    ("artifacts", "blob"),
    ("sources", "blob"),
    ("inputs", "log_blob"),
    ("problems", "blob"),
)


def upgrade() -> None:
    op.add_column("runs", sa.Column("listed", sa.Boolean(), server_default=sa.false(), nullable=False))
    # Before this revision every run was on everyone's home page: keep the ones that exist listed.
    op.execute(sa.text("UPDATE runs SET listed = :listed").bindparams(listed=True))
    op.create_index("ix_runs_created_at", "runs", ["created_at"], unique=False)
    op.create_index("ix_runs_owner", "runs", ["owner"], unique=False)
    for table, column in BLOB_REFERENCES:
        op.create_index(f"ix_{table}_{column}", table, [column], unique=False)


def downgrade() -> None:
    for table, column in BLOB_REFERENCES:
        op.drop_index(f"ix_{table}_{column}", table_name=table)
    op.drop_index("ix_runs_owner", table_name="runs")
    op.drop_index("ix_runs_created_at", table_name="runs")
    with op.batch_alter_table("runs") as batch_op:
        batch_op.drop_column("listed")
