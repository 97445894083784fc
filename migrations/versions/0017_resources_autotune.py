"""Resources of each compilation and autotuning results of each run.

`compilations.resources` (JSON, NULL when unknown): what the kernel binary or its AMDGCN says
(registers, stack/local bytes per thread, static shared memory; for AMD also SGPRs, AGPRs, spill
counts and the compiler's occupancy), read at ingest (parsers/caches/cubin.py,
parsers/caches/amdgcn_resources.py): irlens keeps a cubin only by size and hash, so its numbers are
read while it streams by.
`runs.autotune` (JSON, NULL when the run printed none): the autotuning tables and sessions its logs
hold (parsers/autotuning/autotune.py). Runs ingested before this revision keep NULL in both.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("compilations", sa.Column("resources", sa.JSON(), nullable=True))
    op.add_column("runs", sa.Column("autotune", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("autotune")
    with op.batch_alter_table("compilations") as batch:
        batch.drop_column("resources")
