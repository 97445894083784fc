"""Narrower snapshot and line-index rows.

What a banner says moves onto its row: `snapshots.kind`, `when`, `pass_name`, `pass_arg`,
`pass_options` and `failed` become columns of `banners`, and `snapshots.scope` becomes `unit`, kept only
where the snapshot's scope is not the banner's (a unit read from the body).

A banner whose snapshots disagree on those fields (stored by an older parser, or by hand) is split
into one row per distinct set of fields, so every snapshot reads back what it stored. Banners no
snapshot uses are dropped.

`compilations.metadata_json` is stored zlib-compressed (app/store/models.py: ZippedJSON).

`line_indexes` rows point into `line_index_packs` (one zstd frame per compilation's new indexes,
file names once, uint16 deltas where they fit) instead of holding their own zlib data, and on
SQLite the table is keyed without a rowid. The rows are derived from the stored texts: they are
dropped both ways, and each run's "prepared" mark with them, so the server's background preparation
(app/insight/precompute.py) makes them again (a map visited before that makes its own).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from __future__ import annotations

import json
import zlib
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
    _convert_metadata(sa.LargeBinary(), lambda value: zlib.compress(
        json.dumps(value, separators=(",", ":")).encode(), 9))
    op.drop_table("line_indexes")
    op.create_table(
        "line_indexes",
        sa.Column("blob", sa.LargeBinary(), nullable=False),
        sa.Column("context", sa.String(80), nullable=False),
        sa.Column("flags", sa.Integer(), nullable=False),
        sa.Column("pack", sa.Integer(), nullable=True),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("blob", "context"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "line_index_packs",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("pk"),
    )
    _unmark_prepared_runs()


def downgrade() -> None:
    op.drop_table("line_index_packs")
    op.drop_table("line_indexes")
    op.create_table(  # as 0009 made it, with 0010's 32-byte hash
        "line_indexes",
        sa.Column("blob", sa.LargeBinary(), primary_key=True),
        sa.Column("context", sa.String(80), primary_key=True),
        sa.Column("flags", sa.Integer(), nullable=False),
        sa.Column("files", sa.Text(), nullable=False),
        sa.Column("lines", sa.LargeBinary(), nullable=True),
    )
    _unmark_prepared_runs()
    _convert_metadata(sa.JSON(), lambda value: value)
    _banner_fields_back()


def _convert_metadata(type_, convert) -> None:
    """`compilations.metadata_json` as `type_` (JSON or zlib bytes), each value converted."""
    bind = op.get_bind()
    with op.batch_alter_table("compilations") as batch:
        batch.add_column(sa.Column("metadata_new", type_, nullable=True))
    table = sa.table("compilations", sa.column("pk", sa.Integer()), sa.column("metadata_new", type_))
    last = 0
    while True:
        rows = bind.execute(sa.text("SELECT pk, metadata_json FROM compilations WHERE pk > :last "
                                    "AND metadata_json IS NOT NULL ORDER BY pk LIMIT 1000"), {"last": last}).all()
        if not rows:
            break
        last = rows[-1][0]
        values = []
        for pk, value in rows:
            if isinstance(value, bytes | memoryview):  # zlib bytes, going back
                value = json.loads(zlib.decompress(bytes(value)))
            elif isinstance(value, str):  # SQLite's JSON text
                value = json.loads(value)
            values.append({"key": pk, "value": convert(value)})
        bind.execute(table.update().where(table.c.pk == sa.bindparam("key"))
                     .values(metadata_new=sa.bindparam("value")), values)
    with op.batch_alter_table("compilations") as batch:
        batch.drop_column("metadata_json")
        batch.alter_column("metadata_new", new_column_name="metadata_json", existing_type=type_)


def _unmark_prepared_runs() -> None:
    """Runs lose app/insight/precompute.py's mark ("line_index" in runs.stats): their indexes are made again."""
    bind = op.get_bind()
    value = "CAST(:stats AS JSON)" if bind.dialect.name == "postgresql" else ":stats"
    for run_id, stats in bind.execute(sa.text("SELECT id, stats FROM runs")).all():
        values = json.loads(stats) if isinstance(stats, str | bytes) else stats
        if isinstance(values, dict) and "line_index" in values:
            values.pop("line_index")
            bind.execute(sa.text(f"UPDATE runs SET stats = {value} WHERE id = :id"),
                         {"stats": json.dumps(values), "id": run_id})


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

