"""Snapshot scope: what a dump's body holds (module, function, loop, machine function, op), the
snapshot it is compared with (the previous one of the same scope), and the passes LLVM's pass
manager ran before it without a dump.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("scope_kind", sa.String(16), nullable=True))
        batch.add_column(sa.Column("base_index", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("trace", sa.Text(), nullable=True))
    # Runs ingested before kept module dumps only, each compared with the one before it.
    op.execute(sa.text('UPDATE snapshots SET scope_kind = \'module\', base_index = "index" - 1 WHERE "index" > 0'))
    op.execute(sa.text('UPDATE snapshots SET scope_kind = \'module\' WHERE "index" = 0'))


def downgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_column("trace")
        batch.drop_column("base_index")
        batch.drop_column("scope_kind")
