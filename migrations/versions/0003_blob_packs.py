"""Blob packs: a `zpack` row names the pack it is a slice of, so deletion keeps packs still in use.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("blobs") as batch:
        batch.add_column(sa.Column("pack", sa.String(64), nullable=True))
        batch.create_index("ix_blobs_pack", ["pack"], unique=False)
    # A zpack row's data is b"<pack hash>:<offset>": copy the hash out.
    connection = op.get_bind()
    rows = connection.execute(sa.text("SELECT hash, data FROM blobs WHERE codec = 'zpack'")).all()
    for digest, data in rows:
        pack = bytes(data).split(b":", 1)[0].decode()
        connection.execute(sa.text("UPDATE blobs SET pack = :pack WHERE hash = :hash"), {"pack": pack, "hash": digest})


def downgrade() -> None:
    with op.batch_alter_table("blobs") as batch:
        batch.drop_index("ix_blobs_pack")
        batch.drop_column("pack")
