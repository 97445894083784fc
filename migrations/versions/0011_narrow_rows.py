"""Narrower snapshot and line-index rows.

What a banner says moves onto its row: `snapshots.kind`, `when`, `pass_name`, `pass_arg`,
`pass_options` and `failed` become columns of `banners`, and `snapshots.scope` becomes `unit`, kept only
where the snapshot's scope is not the banner's (a unit read from the body).

A banner whose snapshots disagree on those fields (stored by an older parser, or by hand) is split
into one row per distinct set of fields, so every snapshot reads back what it stored. Banners no
snapshot uses are dropped.

`line_indexes.files` (JSON) and `lines` (zlib of a JSON header and uint32 deltas) become one `data`
column (app/line_index.py: zlib level 9 of both, file names once, uint16 deltas where they fit), and
on SQLite the table is keyed without a rowid (no second copy of the key in an index).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from collections import Counter

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_FIELDS = ("kind", "when", "pass_name", "pass_arg", "pass_options", "failed")


def _columns() -> list[sa.Column]:
    return [
        sa.Column("kind", sa.String(16), nullable=True),
        sa.Column("when", sa.String(8), nullable=True),
        sa.Column("pass_name", sa.String(500), nullable=True),
        sa.Column("pass_arg", sa.String(500), nullable=True),
        sa.Column("pass_options", sa.Text(), nullable=True),
        sa.Column("failed", sa.Boolean(), nullable=True),
    ]


_NOT_NULL = {"kind": sa.String(16), "when": sa.String(8), "pass_name": sa.String(500), "failed": sa.Boolean()}


def _q(name: str) -> str:
    return op.get_bind().dialect.identifier_preparer.quote(name)


def _matches(values: dict, prefix: str = "") -> tuple[str, dict]:
    """A WHERE clause matching these column values, NULLs included, and its parameters."""
    terms, params = [], {}
    for i, (name, value) in enumerate(values.items()):
        if value is None:
            terms.append(f"{prefix}{_q(name)} IS NULL")
        else:
            terms.append(f"{prefix}{_q(name)} = :v{i}")
            params[f"v{i}"] = value
    return " AND ".join(terms), params


def upgrade() -> None:
    _banner_fields()
    _rebuild_line_indexes(_new_data, (sa.Column("data", sa.LargeBinary(), nullable=True),), ("data",),
                          {"sqlite_with_rowid": False})


def downgrade() -> None:
    _rebuild_line_indexes(_old_data, (sa.Column("files", sa.Text(), nullable=False),
                                      sa.Column("lines", sa.LargeBinary(), nullable=True)), ("files", "lines"), {})
    _banner_fields_back()


def _banner_fields() -> None:
    bind = op.get_bind()
    with op.batch_alter_table("banners") as batch:
        for column in _columns():
            batch.add_column(column)
        batch.add_column(sa.Column("scope", sa.Text(), nullable=True))
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("unit", sa.Text(), nullable=True))

    fields = ", ".join(_q(name) for name in _FIELDS)
    groups: dict[tuple, Counter] = {}  # (banner, fields) -> snapshots per scope
    for banner, *values, scope, count in bind.execute(sa.text(
        f"SELECT banner_pk, {fields}, scope, count(*) FROM snapshots GROUP BY banner_pk, {fields}, scope"
    )):
        groups.setdefault((banner, *values), Counter())[scope] += count
    texts = dict(bind.execute(sa.text("SELECT pk, text FROM banners")).all())
    used: set[int] = set()
    for (banner, *values), scopes in sorted(groups.items(), key=lambda item: (item[0][0], -item[1].total())):
        # The banner's scope: the one most of its snapshots have (None if any has none); the others
        # keep theirs as their unit.
        scope = None if None in scopes else scopes.most_common(1)[0][0]
        row = dict(zip(_FIELDS, values), scope=scope)
        if banner in used:  # its snapshots disagree: this set of fields gets a row of its own
            new = bind.execute(
                sa.text(f"INSERT INTO banners (text, {fields}, scope) VALUES (:text, "
                        + ", ".join(f":{name}" for name in _FIELDS) + ", :scope) RETURNING pk"),
                {"text": texts[banner], **row},
            ).scalar_one()
            where, params = _matches(dict(zip(_FIELDS, values)))
            bind.execute(sa.text(f"UPDATE snapshots SET banner_pk = :new WHERE banner_pk = :old AND {where}"),
                         {"new": new, "old": banner, **params})
        else:
            used.add(banner)
            bind.execute(
                sa.text("UPDATE banners SET " + ", ".join(f"{_q(name)} = :{name}" for name in row) + " WHERE pk = :pk"),
                {"pk": banner, **row},
            )
    bind.execute(sa.text("UPDATE snapshots SET unit = scope WHERE scope IS NOT NULL AND NOT EXISTS ("
                         "SELECT 1 FROM banners b WHERE b.pk = snapshots.banner_pk AND b.scope = snapshots.scope)"))
    bind.execute(sa.text("DELETE FROM banners WHERE kind IS NULL"))  # no snapshot printed it

    with op.batch_alter_table("banners") as batch:
        for name, type_ in _NOT_NULL.items():
            batch.alter_column(name, existing_type=type_, nullable=False)
    with op.batch_alter_table("snapshots") as batch:
        for name in (*_FIELDS, "scope"):
            batch.drop_column(name)


def _banner_fields_back() -> None:
    with op.batch_alter_table("snapshots") as batch:
        for column in _columns():
            batch.add_column(column)
        batch.add_column(sa.Column("scope", sa.Text(), nullable=True))
    fields = (*_FIELDS, "scope")
    op.execute(sa.text(
        "UPDATE snapshots SET ("
        + ", ".join(_q(name) for name in fields) + ") = (SELECT "
        + ", ".join(f"b.{_q(name)}" for name in fields) + " FROM banners b WHERE b.pk = snapshots.banner_pk)"
    ))
    op.execute(sa.text("UPDATE snapshots SET scope = unit WHERE unit IS NOT NULL"))
    with op.batch_alter_table("snapshots") as batch:
        for name, type_ in _NOT_NULL.items():
            batch.alter_column(name, existing_type=type_, nullable=False)
        batch.drop_column("unit")
    with op.batch_alter_table("banners") as batch:
        for name in fields:
            batch.drop_column(name)


def _rebuild_line_indexes(convert, columns: tuple, names: tuple[str, ...], kwargs: dict) -> None:
    """A new `line_indexes` with these payload columns, each row converted, in place of the old."""
    bind = op.get_bind()
    op.create_table(
        "line_indexes_new",
        sa.Column("blob", sa.LargeBinary(), nullable=False),
        sa.Column("context", sa.String(80), nullable=False),
        sa.Column("flags", sa.Integer(), nullable=False),
        *columns,
        sa.PrimaryKeyConstraint("blob", "context", name="line_indexes_new_pkey"),
        **kwargs,
    )
    insert = sa.text(f"INSERT INTO line_indexes_new (blob, context, flags, {', '.join(names)}) VALUES "
                     f"(:blob, :context, :flags, {', '.join(':' + name for name in names)})")
    last: tuple = (b"", "")
    while True:
        rows = bind.execute(sa.text(
            "SELECT * FROM line_indexes WHERE blob > :blob OR (blob = :blob AND context > :context) "
            "ORDER BY blob, context LIMIT 2000"), {"blob": last[0], "context": last[1]}).mappings().all()
        if not rows:
            break
        last = (bytes(rows[-1]["blob"]), rows[-1]["context"])
        bind.execute(insert, [{"blob": bytes(row["blob"]), "context": row["context"], "flags": row["flags"],
                               **convert(row)} for row in rows])
    op.drop_table("line_indexes")
    op.rename_table("line_indexes_new", "line_indexes")
    if bind.dialect.name == "postgresql":
        op.execute("ALTER TABLE line_indexes RENAME CONSTRAINT line_indexes_new_pkey TO line_indexes_pkey")


def _old_lines(packed: bytes | None) -> tuple[list, array]:
    if not packed:
        return [], array("I")
    raw = zlib.decompress(packed)
    size = int.from_bytes(raw[:4], "little")
    numbers = array("I")
    numbers.frombytes(raw[4 + size:])
    if sys.byteorder != "little":
        numbers.byteswap()
    return json.loads(raw[4:4 + size]), numbers


def _new_data(row) -> dict:
    """0009's files and lines as 0011's data (app/line_index.py: _pack, as of this revision)."""
    files = json.loads(row["files"]) if row["files"] else {}
    header, numbers = _old_lines(row["lines"])
    if not files and not header:
        return {"data": None}
    names = sorted({file for file, _, _ in header})
    place = {name: i for i, name in enumerate(names)}
    keys: list[int] = []
    previous_file, previous_line = -1, 0
    for file, line, count in header:
        index = place[file]
        keys += (index, line - previous_line if index == previous_file else line, count)
        previous_file, previous_line = index, line
    deltas = list(numbers)
    typecode = "H" if max(deltas, default=0) < 1 << 16 else "I"
    packed = array(typecode, deltas)
    if sys.byteorder != "little":
        packed.byteswap()
    encoded = json.dumps([files, names, keys, typecode], separators=(",", ":")).encode()
    return {"data": zlib.compress(len(encoded).to_bytes(4, "little") + encoded + packed.tobytes(), 9)}


def _old_data(row) -> dict:
    """0011's data as 0009's files and lines."""
    if not row["data"]:
        return {"files": "", "lines": None}
    raw = zlib.decompress(row["data"])
    size = int.from_bytes(raw[:4], "little")
    files, names, keys, typecode = json.loads(raw[4:4 + size])
    deltas = array(typecode)
    deltas.frombytes(raw[4 + size:])
    if sys.byteorder != "little":
        deltas.byteswap()
    header, line, previous_file = [], 0, -1
    for i in range(0, len(keys), 3):
        file, step, count = keys[i:i + 3]
        line = step if file != previous_file else line + step
        previous_file = file
        header.append([names[file], line, count])
    lines = None
    if header:
        numbers = array("I", deltas)
        if sys.byteorder != "little":
            numbers.byteswap()
        encoded = json.dumps(header, separators=(",", ":")).encode()
        lines = zlib.compress(len(encoded).to_bytes(4, "little") + encoded + numbers.tobytes(), 6)
    return {"files": json.dumps(files), "lines": lines}
