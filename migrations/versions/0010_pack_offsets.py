"""Pack slices: a zpack row's data is its offset alone (its pack is named in `pack` since 0003), and
an index of the zstd frames that the background recompression has yet to do.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# b"<64 hex digits>:<offset>": the offset starts at byte 66 (SQL counts from 1)
_OLD_FORM = "codec = 'zpack' AND length(data) > 65"


def upgrade() -> None:
    # 70 bytes of every slice row were the pack's hash again (0.15 MB of the corpus database).
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"UPDATE blobs SET data = substring(data from 66) WHERE {_OLD_FORM}")
    else:
        op.execute(f"UPDATE blobs SET data = substr(data, 66) WHERE {_OLD_FORM}")
    # Texts stored before are recompressed in the background too (app/recompress.py).
    where = sa.text("codec = 'zstd'")
    op.create_index("ix_blobs_to_recompress", "blobs", ["hash"], sqlite_where=where, postgresql_where=where)


def downgrade() -> None:
    op.drop_index("ix_blobs_to_recompress", table_name="blobs")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE blobs SET data = convert_to(pack || ':', 'UTF8') || data WHERE codec = 'zpack'")
    else:
        op.execute("UPDATE blobs SET data = CAST(pack || ':' || CAST(data AS TEXT) AS BLOB) WHERE codec = 'zpack'")
    # recompressed frames read as plain zstd ones before this revision
    op.execute("UPDATE blobs SET codec = 'zstd' WHERE codec = 'zstdx'")
