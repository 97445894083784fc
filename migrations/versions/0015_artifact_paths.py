"""Artifact rows without what they repeat: a file of the compilation's own cache folder is stored by
its name in that folder, and a text's sha256 is not stored beside the same hash in `blob`.

For such a file `artifacts.path` holds its path below the folder (`compilations.cache_key`) and the new
`artifacts.in_folder` is true; any other path is stored whole as before.
`artifacts.sha256` is NULL where it equals `blob` (every stored text; binaries keep theirs).
app/store/models.py reads both back whole (`Artifact.path`, `Artifact.sha256`). On the corpus database:
117 KB less of 5.17 MB (bench/NOTES.md, round 7).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_FOLDER = "(SELECT c.cache_key FROM compilations c WHERE c.pk = artifacts.compilation_pk)"


def upgrade() -> None:
    op.add_column("artifacts", sa.Column("in_folder", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(
        f"UPDATE artifacts SET path = substr(path, length({_FOLDER}) + 2), in_folder = true "
        f"WHERE {_FOLDER} <> '' AND substr(path, 1, length({_FOLDER}) + 1) = {_FOLDER} || '/'"
    )
    with op.batch_alter_table("artifacts") as batch:
        batch.alter_column("sha256", existing_type=sa.LargeBinary(), nullable=True)
    op.execute("UPDATE artifacts SET sha256 = NULL WHERE sha256 = blob")


def downgrade() -> None:
    op.execute("UPDATE artifacts SET sha256 = blob WHERE sha256 IS NULL")
    op.execute(f"UPDATE artifacts SET path = {_FOLDER} || '/' || path WHERE in_folder")
    with op.batch_alter_table("artifacts") as batch:
        batch.alter_column("sha256", existing_type=sa.LargeBinary(), nullable=False)
        batch.drop_column("in_folder")
