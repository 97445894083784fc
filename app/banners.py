"""Dump banners interned: each distinct banner text is one `banners` row, shared by every snapshot
(of any run) that printed it."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.models import Banner

_CHUNK = 500  # texts per lookup: well under SQLite's and PostgreSQL's parameter limits


def banner_ids(session: Session, texts: set[str]) -> dict[str, int]:
    """The row of each text, made where none exists yet."""
    ids: dict[str, int] = {}
    ordered = sorted(texts)
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        for pk, text in session.execute(select(Banner.pk, Banner.text).where(Banner.text.in_(chunk))):
            ids.setdefault(text, pk)
    missing = [text for text in ordered if text not in ids]
    if missing:
        # One multi-row INSERT ... RETURNING (SQLAlchemy batches the rows), not one per banner: a fresh
        # database gets hundreds of new banners from one big log.
        statement = insert(Banner).returning(Banner.pk, Banner.text)
        for pk, text in session.execute(statement, [{"text": text} for text in missing]):
            ids[text] = pk
    return ids
