"""Quick-compacted frames (codec 'zstdm'): the recompression index also lists them.

`irlens ingest` compacts at a quick level before it returns and marks those frames 'zstdm'; the
server's background compaction and `irlens compact` recompress them at the strong level later
(app/store/compaction.py), finding them through the partial index as they find fresh 'zstd' ones.

Revision ID: 0020_i32
Revises: 0019_i34
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_i32"
down_revision = "0019_i34"
branch_labels = None
depends_on = None


def _index(where: str) -> None:
    op.drop_index("ix_blobs_to_recompress", table_name="blobs")
    op.create_index("ix_blobs_to_recompress", "blobs", ["hash"], sqlite_where=sa.text(where),
                    postgresql_where=sa.text(where))


def upgrade() -> None:
    _index("codec IN ('zstd', 'zstdm')")


def downgrade() -> None:
    # a quick frame reads as a fresh one before this revision (a later compaction merges it again)
    op.execute("UPDATE blobs SET codec = 'zstd' WHERE codec = 'zstdm'")
    _index("codec = 'zstd'")
