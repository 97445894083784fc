"""Line indexes keyed by their blob's id, and collected with it.

`line_indexes.blob` (the text's 32-byte hash) becomes `blob_id`, a reference to `blobs.id`, as
snapshots' and pack slices' references became in 0013: 55 KB less on the corpus database (bench/NOTES.md,
round 8). The key was never a foreign key, so deleting a run left its texts' line indexes (and their
packs) behind; the garbage collector now deletes them with their blob (app/store/retention.py), and the
reference keeps a reused blob id from ever meeting an old index. Rows whose blob is gone, and packs
no row points into, are dropped here.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_REST = "context, flags, pack, start, size"


def _columns() -> list[sa.Column]:
    return [
        sa.Column("context", sa.String(80), nullable=False),
        sa.Column("flags", sa.Integer(), nullable=False),
        sa.Column("pack", sa.Integer(), nullable=True),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
    ]


def _replace(key: sa.Column, primary: str, select: str) -> None:
    """`line_indexes` made again with `key` and the other columns, filled by `select`."""
    op.create_table("line_indexes_new", key, *_columns(), sa.PrimaryKeyConstraint(primary, "context"),
                    sqlite_with_rowid=False)
    op.execute(f"INSERT INTO line_indexes_new ({primary}, {_REST}) {select}")
    op.drop_table("line_indexes")
    op.rename_table("line_indexes_new", "line_indexes")
    op.execute("DELETE FROM line_index_packs WHERE pk NOT IN "
               "(SELECT pack FROM line_indexes WHERE pack IS NOT NULL)")


def upgrade() -> None:
    _replace(sa.Column("blob_id", sa.Integer(), sa.ForeignKey("blobs.id"), nullable=False), "blob_id",
             f"SELECT b.id, {', '.join('l.' + name for name in _REST.split(', '))} "
             "FROM line_indexes l JOIN blobs b ON b.hash = l.blob")
    if op.get_bind().dialect.name == "postgresql":  # SQLite names its key constraint itself
        op.execute("ALTER TABLE line_indexes RENAME CONSTRAINT line_indexes_new_pkey TO line_indexes_pkey")


def downgrade() -> None:
    _replace(sa.Column("blob", sa.LargeBinary(), nullable=False), "blob",
             f"SELECT b.hash, {', '.join('l.' + name for name in _REST.split(', '))} "
             "FROM line_indexes l JOIN blobs b ON b.id = l.blob_id")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE line_indexes RENAME CONSTRAINT line_indexes_new_pkey TO line_indexes_pkey")
