"""Snapshots keyed by (compilation, index): the surrogate `pk` and its second index go.

Every read finds a snapshot by its compilation and index, or lists a compilation's snapshots in
index order; nothing refers to `snapshots.pk`. With the pair as the primary key (SQLite: WITHOUT
ROWID, so the rows are stored in that order), the unique index `ix_snapshot_compilation_index`
duplicated the key. On the corpus database: 88 KB less of 5.17 MB (bench/NOTES.md, round 7).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_COLUMNS = ('compilation_pk, "index", unit, stage, changed, line, size, line_count, blob_id, banner_pk, '
            "scope_kind, base_index, trace")


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _columns() -> list[sa.Column]:
    """The columns both forms share, as revision 0013 left them."""
    return [
        sa.Column("compilation_pk", sa.Integer(), sa.ForeignKey("compilations.pk", ondelete="CASCADE"), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("unit", sa.Text(), nullable=True),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("changed", sa.Boolean(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("line_count", sa.Integer(), nullable=False),
        sa.Column("blob_id", sa.Integer(), sa.ForeignKey("blobs.id"), nullable=False),
        sa.Column("banner_pk", sa.Integer(), sa.ForeignKey("banners.pk"), nullable=False),
        sa.Column("scope_kind", sa.String(16), nullable=True),
        sa.Column("base_index", sa.Integer(), nullable=True),
        sa.Column("trace", sa.Text(), nullable=True),
    ]


def upgrade() -> None:
    if _postgresql():
        op.drop_index("ix_snapshot_compilation_index", table_name="snapshots")
        op.drop_constraint("snapshots_pkey", "snapshots", type_="primary")
        op.drop_column("snapshots", "pk")
        op.create_primary_key("snapshots_pkey", "snapshots", ["compilation_pk", "index"])
        return
    # SQLite: a table's rowid form is fixed when it is made; rebuild it (foreign keys are off during
    # migrations: app/store/db.py).
    op.create_table("snapshots_new", *_columns(), sa.PrimaryKeyConstraint("compilation_pk", "index"),
                    sqlite_with_rowid=False)
    op.execute(f"INSERT INTO snapshots_new ({_COLUMNS}) SELECT {_COLUMNS} FROM snapshots")
    op.drop_table("snapshots")
    op.rename_table("snapshots_new", "snapshots")
    op.create_index("ix_snapshots_blob_id", "snapshots", ["blob_id"])


def downgrade() -> None:
    if _postgresql():
        op.drop_constraint("snapshots_pkey", "snapshots", type_="primary")
        op.execute("ALTER TABLE snapshots ADD COLUMN pk SERIAL PRIMARY KEY")
        op.create_index("ix_snapshot_compilation_index", "snapshots", ["compilation_pk", "index"], unique=True)
        return
    op.create_table("snapshots_old", sa.Column("pk", sa.Integer(), nullable=False), *_columns(),
                    sa.PrimaryKeyConstraint("pk"))
    op.execute(f"INSERT INTO snapshots_old ({_COLUMNS}) SELECT {_COLUMNS} FROM snapshots "
               'ORDER BY compilation_pk, "index"')
    op.drop_table("snapshots")
    op.rename_table("snapshots_old", "snapshots")
    op.create_index("ix_snapshots_blob_id", "snapshots", ["blob_id"])
    op.create_index("ix_snapshot_compilation_index", "snapshots", ["compilation_pk", "index"], unique=True)
