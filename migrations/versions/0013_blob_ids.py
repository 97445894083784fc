"""Blob ids and interned names: snapshots and pack slices refer to a blob by an integer id instead of
its 32-byte hash, and a snapshot's stage and scope kind are stored as one character.

`blobs` gets an integer primary key `id` (SQLite: the rowid itself) and keeps `hash` unique, so the
tables that refer to a blob by hash (artifacts, sources, inputs, problems, line indexes, stored diffs)
are unchanged. `snapshots.blob` becomes `snapshots.blob_id` and `blobs.pack` becomes `blobs.pack_id`:
a few bytes instead of 32 in the row and in its index, for the rows that come by the thousand
(bench/NOTES.md: ~0.4 MB of the corpus database's 5.8).

`snapshots.stage` and `snapshots.scope_kind` hold the names app/store/models.py lists (`Interned`) as one
control character each, their place in that list; other names stay as they are.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_RECOMPRESS_WHERE = sa.text("codec = 'zstd'")
# As app/store/models.py has them at this revision (STAGE_NAMES, SCOPE_KIND_NAMES): stored codes are places here.
_INTERNED = {
    "stage": ("ttir", "ttgir", "llvm-dialect", "llvm-ir", "mlir"),
    "scope_kind": ("module", "function", "loop", "region", "machine", "op"),
}


def _intern(upgrade: bool) -> None:
    for column, names in _INTERNED.items():
        for place, name in enumerate(names, start=1):
            old, new = (name, chr(place)) if upgrade else (chr(place), name)
            op.execute(sa.text(f"UPDATE snapshots SET {column} = :new WHERE {column} = :old").bindparams(old=old, new=new))


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if _postgresql():
        _blobs_postgresql_up()
    else:
        _blobs_sqlite(upgrade=True)
    op.add_column("snapshots", sa.Column("blob_id", sa.Integer(), nullable=True))
    if _postgresql():
        op.execute("UPDATE snapshots s SET blob_id = b.id FROM blobs b WHERE b.hash = s.blob")
    else:
        op.execute("UPDATE snapshots SET blob_id = (SELECT b.id FROM blobs b WHERE b.hash = snapshots.blob)")
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_index("ix_snapshots_blob")
        batch.drop_column("blob")
        batch.alter_column("blob_id", existing_type=sa.Integer(), nullable=False)
        batch.create_foreign_key("snapshots_blob_id_fkey", "blobs", ["blob_id"], ["id"])
        batch.create_index("ix_snapshots_blob_id", ["blob_id"])
    _intern(upgrade=True)


def downgrade() -> None:
    _intern(upgrade=False)
    op.add_column("snapshots", sa.Column("blob", sa.LargeBinary(), nullable=True))
    if _postgresql():
        op.execute("UPDATE snapshots s SET blob = b.hash FROM blobs b WHERE b.id = s.blob_id")
    else:
        op.execute("UPDATE snapshots SET blob = (SELECT b.hash FROM blobs b WHERE b.id = snapshots.blob_id)")
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_index("ix_snapshots_blob_id")
        batch.drop_column("blob_id")
        batch.alter_column("blob", existing_type=sa.LargeBinary(), nullable=False)
        batch.create_foreign_key("snapshots_blob_fkey", "blobs", ["blob"], ["hash"])
        batch.create_index("ix_snapshots_blob", ["blob"])
    if _postgresql():
        _blobs_postgresql_down()
    else:
        _blobs_sqlite(upgrade=False)


def _blobs_sqlite(upgrade: bool) -> None:
    """Rebuild `blobs` in the new (or old) form, ids being the old rowids (foreign keys are off
    during migrations: app/store/db.py)."""
    if upgrade:
        op.create_table(
            "blobs_new",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("hash", sa.LargeBinary(), nullable=False),
            sa.Column("size", sa.Integer(), nullable=False),
            sa.Column("codec", sa.String(8), nullable=False),
            sa.Column("data", sa.LargeBinary(), nullable=False),
            sa.Column("pack_id", sa.Integer(), nullable=True),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("hash"),
            sa.ForeignKeyConstraint(["pack_id"], ["blobs.id"]),
        )
        op.execute("INSERT INTO blobs_new (id, hash, size, codec, data, pack_id) "
                   "SELECT b.rowid, b.hash, b.size, b.codec, b.data, p.rowid FROM blobs b "
                   "LEFT JOIN blobs p ON p.hash = b.pack ORDER BY b.rowid")
    else:
        op.create_table(
            "blobs_new",
            sa.Column("hash", sa.LargeBinary(), nullable=False),
            sa.Column("size", sa.Integer(), nullable=False),
            sa.Column("codec", sa.String(8), nullable=False),
            sa.Column("data", sa.LargeBinary(), nullable=False),
            sa.Column("pack", sa.LargeBinary(), nullable=True),
            sa.PrimaryKeyConstraint("hash"),
        )
        op.execute("INSERT INTO blobs_new (hash, size, codec, data, pack) "
                   "SELECT b.hash, b.size, b.codec, b.data, p.hash FROM blobs b "
                   "LEFT JOIN blobs p ON p.id = b.pack_id ORDER BY b.id")
    op.drop_table("blobs")
    op.rename_table("blobs_new", "blobs")
    pack = "pack_id" if upgrade else "pack"
    op.create_index(f"ix_blobs_{pack}", "blobs", [pack])
    op.create_index("ix_blobs_to_recompress", "blobs", ["hash"], sqlite_where=_RECOMPRESS_WHERE)


def _keys_to_blobs() -> list[tuple[str, dict]]:
    inspector = sa.inspect(op.get_bind())
    return [(table, key) for table in inspector.get_table_names() for key in inspector.get_foreign_keys(table)
            if key["referred_table"] == "blobs"]


def _blobs_postgresql_up() -> None:
    keys = _keys_to_blobs()
    for table, key in keys:  # they lean on the primary key's index, which goes
        op.drop_constraint(key["name"], table, type_="foreignkey")
    op.execute("ALTER TABLE blobs ADD COLUMN id SERIAL")
    op.execute("ALTER TABLE blobs DROP CONSTRAINT blobs_pkey")
    op.create_primary_key("blobs_pkey", "blobs", ["id"])
    op.create_unique_constraint("blobs_hash_key", "blobs", ["hash"])
    op.add_column("blobs", sa.Column("pack_id", sa.Integer(), nullable=True))
    op.execute("UPDATE blobs b SET pack_id = p.id FROM blobs p WHERE p.hash = b.pack")
    op.drop_index("ix_blobs_pack", table_name="blobs")
    op.drop_column("blobs", "pack")
    op.create_index("ix_blobs_pack_id", "blobs", ["pack_id"])
    op.create_foreign_key("blobs_pack_id_fkey", "blobs", "blobs", ["pack_id"], ["id"])
    for table, key in keys:
        if table != "snapshots":  # snapshots.blob goes (upgrade)
            op.create_foreign_key(key["name"], table, "blobs", key["constrained_columns"], ["hash"])


def _blobs_postgresql_down() -> None:
    keys = [(table, key) for table, key in _keys_to_blobs() if key["referred_columns"] == ["hash"]]
    for table, key in keys:
        op.drop_constraint(key["name"], table, type_="foreignkey")
    op.add_column("blobs", sa.Column("pack", sa.LargeBinary(), nullable=True))
    op.execute("UPDATE blobs b SET pack = p.hash FROM blobs p WHERE p.id = b.pack_id")
    op.drop_constraint("blobs_pack_id_fkey", "blobs", type_="foreignkey")
    op.drop_index("ix_blobs_pack_id", table_name="blobs")
    op.drop_column("blobs", "pack_id")
    op.create_index("ix_blobs_pack", "blobs", ["pack"])
    op.drop_constraint("blobs_hash_key", "blobs", type_="unique")
    op.drop_constraint("blobs_pkey", "blobs", type_="primary")
    op.drop_column("blobs", "id")
    op.create_primary_key("blobs_pkey", "blobs", ["hash"])
    for table, key in keys:
        op.create_foreign_key(key["name"], table, "blobs", key["constrained_columns"], ["hash"])
