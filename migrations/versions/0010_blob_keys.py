"""Smaller blob keys: hashes as 32 bytes, a pack slice's data its offset alone, and an index of the
zstd frames that the background recompression has yet to do.

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
# every sha256 column, by table (app/store/models.py: HexHash)
_HASHES = {
    "blobs": ("hash", "pack"),
    "line_indexes": ("blob",),
    "snapshots": ("blob",),
    "artifacts": ("sha256", "blob"),
    "sources": ("blob",),
    "inputs": ("log_blob",),
    "problems": ("blob",),
}
_CHUNK = 5000


def _convert_sqlite(table: str, column: str, convert) -> None:
    """Rewrite a column's values in place, chunk by chunk (SQLite 3.40 has no unhex())."""
    bind = op.get_bind()
    last = -1
    while True:
        rows = bind.execute(sa.text(
            f"SELECT rowid, {column} FROM {table} WHERE rowid > :last AND {column} IS NOT NULL "
            f"ORDER BY rowid LIMIT {_CHUNK}"), {"last": last}).all()
        if not rows:
            return
        last = rows[-1][0]
        changed = [{"r": rowid, "v": new} for rowid, value in rows if (new := convert(value)) is not None]
        if changed:
            bind.execute(sa.text(f"UPDATE {table} SET {column} = :v WHERE rowid = :r"), changed)


def _to_bytes(value) -> bytes | None:
    text = value if isinstance(value, str) else bytes(value).decode("ascii", "replace")
    try:
        return bytes.fromhex(text)
    except ValueError:  # not a hash: left as it is
        return None


def _to_hex(value) -> str | None:
    return bytes(value).hex() if isinstance(value, bytes | memoryview) else None


def _retype(to_type, from_type, pg_using: str, convert) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        inspector = sa.inspect(bind)
        keys = [(table, key) for table in _HASHES for key in inspector.get_foreign_keys(table)
                if key["referred_table"] == "blobs"]
        for table, key in keys:  # a key and its references must change type together
            op.drop_constraint(key["name"], table, type_="foreignkey")
        for table, columns in _HASHES.items():
            for column in columns:
                op.alter_column(table, column, type_=to_type, existing_type=from_type,
                                postgresql_using=pg_using.format(column=column))
        for table, key in keys:
            op.create_foreign_key(key["name"], table, "blobs", key["constrained_columns"], key["referred_columns"])
        return
    for table, columns in _HASHES.items():
        for column in columns:  # values first: the rebuild below copies them with a CAST to the new type
            _convert_sqlite(table, column, convert)
        with op.batch_alter_table(table, recreate="always") as batch:
            for column in columns:
                batch.alter_column(column, type_=to_type, existing_type=from_type)


def upgrade() -> None:
    # 70 bytes of every slice row were the pack's hash again (0.15 MB of the corpus database).
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"UPDATE blobs SET data = substring(data from 66) WHERE {_OLD_FORM}")
    else:
        op.execute(f"UPDATE blobs SET data = substr(data, 66) WHERE {_OLD_FORM}")
    _retype(sa.LargeBinary(), sa.String(64), "decode({column}, 'hex')", _to_bytes)
    # Texts stored before are recompressed in the background too (app/store/recompress.py).
    where = sa.text("codec = 'zstd'")
    op.create_index("ix_blobs_to_recompress", "blobs", ["hash"], sqlite_where=where, postgresql_where=where)


def downgrade() -> None:
    op.drop_index("ix_blobs_to_recompress", table_name="blobs")
    _retype(sa.String(64), sa.LargeBinary(), "encode({column}, 'hex')", _to_hex)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE blobs SET data = convert_to(pack || ':', 'UTF8') || data WHERE codec = 'zpack'")
    else:
        op.execute("UPDATE blobs SET data = CAST(pack || ':' || CAST(data AS TEXT) AS BLOB) WHERE codec = 'zpack'")
    # recompressed frames read as plain zstd ones before this revision
    op.execute("UPDATE blobs SET codec = 'zstd' WHERE codec IN ('zstdx', 'zstdm')")
