"""Compilations: `derived`, what a compilation's IR says of its config (the tile of its first tt.dot,
num_warps from its TTGIR, the generated module its kernel comes from and what that states), stored
once by the background preparation so a run page matches autotune configs without reading IR texts.
Runs ingested before get it on the server's next preparation round; until then pages read the IR.

Revision ID: 0021_i33b
Revises: 0020_i32
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_i33b"
down_revision = "0020_i32"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("compilations") as batch:
        batch.add_column(sa.Column("derived", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("compilations") as batch:
        batch.drop_column("derived")
