"""What a compilation's pass timeline counts in each stored text (op groups, chart measures,
convert_layout costs), worked out with one read of the text.

Each count has its own cache by blob hash (app.render, app.insight.pass_charts, app.layouts.cvt_costs),
but each used to load the text itself. A compare page touches ~150 blobs, more than the blob
reader keeps, so a cold page decompressed every text three or four times; here the blob rows come
in one query and each text is decoded at most once, whichever counts are missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.insight.pass_charts import blob_measures
from app.layouts.cvt_costs import counts_by_kind
from app.layouts.smem_costs import counts_by_digest
from app.store.models import Blob

TextLoader = Callable[[], str | None]
_IN_CHUNKS = 500  # bound parameters per IN (...) query


def prefetch_blobs(session: Session, digests: Iterable[str]) -> None:
    """Load these blob rows in one query: the reader's per-blob lookups then find them in the
    session instead of asking the database once per blob."""
    listed = sorted(set(digests))
    for start in range(0, len(listed), _IN_CHUNKS):
        session.scalars(select(Blob).where(Blob.hash.in_(listed[start:start + _IN_CHUNKS]))).all()


def text_once(session: Session, digest: str) -> TextLoader:
    """A loader that reads the blob's text on its first call only."""
    held: list[str | None] = []

    def load() -> str | None:
        if not held:
            held.append(render.blob_reader.text(session, digest))
        return held[0]

    return load


def warm(session: Session, digests: Iterable[str]) -> None:
    """Fill every per-blob count cache for these blobs, one text in memory at a time."""
    ordered = list(dict.fromkeys(digests))
    prefetch_blobs(session, ordered)
    for digest in ordered:
        load = text_once(session, digest)
        render.ops_counts(digest, load)
        blob_measures(digest, load)
        counts_by_kind(digest, load)
        counts_by_digest(digest, load)
