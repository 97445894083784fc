"""Diffs of adjacent snapshots, computed once a run is stored and kept as their segments.

A diff page's cold cost is aligning two texts (app/diff/): ~180 ms for a 21,000/7,000-line pair
of LLVM-dialect dumps, where the lowering renumbered every value. Its result is small: a pair's
segments (the runs of equal, paired, deleted and inserted lines) pack into ~1 KB. So the background
preparation after each upload (app/insight/precompute.py) diffs the large adjacent pairs of the new run with
the default options and stores the packed segments, keyed by the two blobs; the first visit of such
a diff reads them instead of aligning. Small pairs (under MIN_LINES lines together) cost a few ms
and are not stored; other options (locations, SSA or alias numbering) are always computed.

Correct without the rows: a pair not stored yet (the run is still being prepared, or was ingested
before this existed and not prepared since) is computed as before. Each row names the diff code it
came from (VERSION, a digest of app/diff/): rows of another version are ignored, and replaced
when their run is prepared again.
"""

from __future__ import annotations

import hashlib
import sys
import zlib
from array import array
from pathlib import Path

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app import diff, foreground
from app.store.blobs import BlobReader, insert_ignoring
from app.store.models import AdjacentDiff, Compilation, Snapshot

MARK = "adjacent_diffs"  # in Run.stats once the run's large adjacent diffs are stored
MIN_LINES = 4000  # both sides' lines together: smaller pairs diff in ~10 ms on a visit
# The stored segments are only as good as the algorithm that made them: any change to app/diff/ renews them.
VERSION = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(diff.__file__).parent.glob("*.py")))).hexdigest()[:16]
_OPS = (diff.EQUAL, diff.REPLACE, diff.DELETE, diff.INSERT)
_CHUNK = 200


def worth_storing(a_lines: int, b_lines: int) -> bool:
    return a_lines + b_lines >= MIN_LINES


def pack(segments: list[diff.Segment]) -> bytes:
    """zlib of: one byte per segment (op index × 2 + ignored), then each segment's A and B lengths
    as uint32 (little-endian). Segments are contiguous, so the lengths place them."""
    ops = bytes(_OPS.index(s.op) * 2 + s.ignored for s in segments)
    lengths = array("I", [n for s in segments for n in (s.a_end - s.a_start, s.b_end - s.b_start)])
    if sys.byteorder != "little":
        lengths.byteswap()
    return zlib.compress(len(segments).to_bytes(4, "little") + ops + lengths.tobytes(), 6)


def unpack(data: bytes, a_lines: int, b_lines: int) -> list[diff.Segment] | None:
    """The segments, or None when they do not cover exactly `a_lines` and `b_lines` lines."""
    try:
        raw = zlib.decompress(data)
    except zlib.error:
        return None
    count = int.from_bytes(raw[:4], "little")
    ops = raw[4 : 4 + count]
    lengths = array("I")
    lengths.frombytes(raw[4 + count :])
    if sys.byteorder != "little":
        lengths.byteswap()
    if len(ops) != count or len(lengths) != 2 * count:
        return None
    segments = []
    a = b = 0
    for code, a_len, b_len in zip(ops, lengths[0::2], lengths[1::2]):
        if code >= 2 * len(_OPS):
            return None
        segments.append(diff.Segment(_OPS[code >> 1], a, a + a_len, b, b + b_len, bool(code & 1)))
        a += a_len
        b += b_len
    return segments if (a, b) == (a_lines, b_lines) else None


def stored_result(session: Session, a_blob: str, b_blob: str, a_text: str, b_text: str) -> diff.DiffResult | None:
    """The stored default-options diff of two blobs, or None (not stored, or by other diff code)."""
    data = session.scalar(
        select(AdjacentDiff.segments).where(
            AdjacentDiff.a_blob == a_blob, AdjacentDiff.b_blob == b_blob, AdjacentDiff.version == VERSION
        )
    )
    if data is None:
        return None
    a_lines, b_lines = diff.split_lines(a_text), diff.split_lines(b_text)
    segments = unpack(data, len(a_lines), len(b_lines))
    if segments is None:
        return None
    return diff.DiffResult(a_lines, b_lines, diff.DiffOptions(), segments, notes=diff.print_form_notes(a_text, b_text))


def run_pairs(session: Session, run_id: str) -> list[tuple[str, str]]:
    """The run's adjacent pairs worth storing, by blob: each snapshot with its base (the diff its page
    links) and with the snapshot before it, where the texts differ. In compilation order."""
    rows = session.execute(
        select(Snapshot.compilation_pk, Snapshot.index, Snapshot.base_index, Snapshot.blob, Snapshot.line_count)
        .join(Compilation, Snapshot.compilation_pk == Compilation.pk)
        .where(Compilation.run_id == run_id)
        .order_by(Snapshot.compilation_pk, Snapshot.index)
    ).all()
    by_index = {(row.compilation_pk, row.index): row for row in rows}
    pairs: dict[tuple[str, str], None] = {}
    for row in rows:
        for before in (row.base_index, row.index - 1):
            other = by_index.get((row.compilation_pk, before)) if before is not None else None
            if other is not None and other.blob != row.blob and worth_storing(other.line_count, row.line_count):
                pairs[(other.blob, row.blob)] = None
    return list(pairs)


def store_run(session: Session, run_id: str, reader: BlobReader | None = None) -> int:
    """Diff and store the run's large adjacent pairs not stored yet by this diff code, committing
    each. Returns how many were stored. Idempotent: a row another process stored meanwhile is kept."""
    reader = reader or BlobReader(capacity=4)
    pairs = run_pairs(session, run_id)
    current: set[tuple[str, str]] = set()
    wanted = set(pairs)
    a_blobs = sorted({a for a, _ in pairs})
    for start in range(0, len(a_blobs), _CHUNK):
        found = session.execute(
            select(AdjacentDiff.a_blob, AdjacentDiff.b_blob, AdjacentDiff.version).where(
                AdjacentDiff.a_blob.in_(a_blobs[start : start + _CHUNK])
            )
        ).all()
        for a, b, version in found:
            if (a, b) not in wanted:
                continue
            if version == VERSION:
                current.add((a, b))
            else:  # by other diff code: replaced below
                session.execute(delete(AdjacentDiff).where(AdjacentDiff.a_blob == a, AdjacentDiff.b_blob == b))
    session.commit()
    stored = 0
    for a_blob, b_blob in pairs:
        if (a_blob, b_blob) in current:
            continue
        foreground.give_way()
        a_text, b_text = reader.text(session, a_blob), reader.text(session, b_blob)
        if a_text is None or b_text is None:
            continue
        result = diff.diff_texts(a_text, b_text)
        values = {"a_blob": a_blob, "b_blob": b_blob, "version": VERSION, "segments": pack(result.segments)}
        session.execute(insert_ignoring(session, AdjacentDiff, ("a_blob", "b_blob")), [values])
        session.commit()  # one pair at a time: no write lock held while the next one is aligned
        stored += 1
    return stored
