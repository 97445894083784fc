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
    for text in ordered:
        if text not in ids:
            ids[text] = session.execute(insert(Banner).values(text=text).returning(Banner.pk)).scalar_one()
    return ids
