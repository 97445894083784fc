"""Per-pass source indexes for the map page: which IR lines of each snapshot map to which Python lines.

A compilation with LLVM dumps has hundreds of snapshots of thousands of lines each, and the map
page needs all of them on its first visit. Their indexes are computed at ingest and stored per
blob (app/insight/line_index.py), so the page reads small packed rows instead of the IR texts; only the
quoted lines of a Python line read the texts that have some.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import render
from app.insight import line_index
from app.store.models import Snapshot


@dataclass
class PassIndex:
    """One snapshot's index: located IR lines per primary file, and the IR lines of one Python line."""

    files: dict[str, int]
    lines: Callable[[str, int], list[int]]  # (recorded file, Python line) -> 1-based IR lines
    text: render.TextLoader  # the snapshot's text (read anew each call: a page holds none of them)


def pass_indexes(session: Session, snapshots: Iterable[Snapshot]) -> list[PassIndex]:
    """The index of each snapshot, in order (``snapshots`` in compilation order), from the stored
    line indexes (computed and stored here for runs ingested before them)."""
    snapshots = list(snapshots)
    entries = line_index.indexes_for(session, snapshots)
    if session.new:
        try:
            session.commit()  # kept for the next visit
        except IntegrityError:
            session.rollback()  # a request beside this one stored the same rows first
    return [
        PassIndex(entry.files, entry.lines, _loader(session, snapshot.blob))
        for snapshot, entry in zip(snapshots, entries, strict=True)
    ]


def _loader(session: Session, digest: str) -> render.TextLoader:
    return lambda: render.blob_reader.text(session, digest) or ""


def clear() -> None:
    line_index.clear()
