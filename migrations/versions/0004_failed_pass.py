"""A failed compilation names the pass that failed (Triton's "IR Dump After X Failed").

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("compilations") as batch:
        batch.add_column(sa.Column("failed_pass", sa.String(500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("compilations") as batch:
        batch.drop_column("failed_pass")
