"""Dump banners interned: each distinct banner, with what it says (pass, before/after, kind, scope,
failed), is one `banners` row, shared by every snapshot (of any run) that printed it."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.store.models import Banner
from parsers.records import DumpHeader

_CHUNK = 500  # texts per lookup: well under SQLite's and PostgreSQL's parameter limits
FIELDS = ("text", "kind", "when", "pass_name", "pass_arg", "pass_options", "scope", "failed")
BannerKey = tuple  # a banner row's FIELDS, in order


def banner_key(header: DumpHeader) -> BannerKey:
    return (header.raw, header.kind, header.when, header.pass_name, header.pass_arg, header.pass_options,
            header.scope, bool(header.failed))


def banner_ids(session: Session, keys: set[BannerKey]) -> dict[BannerKey, int]:
    """The row of each banner, made where none exists yet. A row is reused only when all its fields
    match: a banner parsed otherwise by an older irlens keeps its own row."""
    ids: dict[BannerKey, int] = {}
    texts = sorted({key[0] for key in keys})
    columns = [getattr(Banner, name) for name in FIELDS]
    for start in range(0, len(texts), _CHUNK):
        chunk = texts[start : start + _CHUNK]
        for pk, *fields in session.execute(select(Banner.pk, *columns).where(Banner.text.in_(chunk))):
            fields[-1] = bool(fields[-1])
            ids.setdefault(tuple(fields), pk)
    missing = sorted(keys - ids.keys(), key=lambda key: tuple("" if v is None else str(v) for v in key))
    if missing:
        # One multi-row INSERT ... RETURNING (SQLAlchemy batches the rows), not one per banner: a fresh
        # database gets hundreds of new banners from one big log.
        statement = insert(Banner).returning(Banner.pk, sort_by_parameter_order=True)
        rows = session.execute(statement, [dict(zip(FIELDS, key)) for key in missing])
        ids.update(zip(missing, rows.scalars()))
    return {key: ids[key] for key in keys}
