"""Recompresses stored texts at a strong zstd level after ingest, in the background.

An ingest compresses for speed (app/store/blobs.py: zstd level 2), since
strong levels run at a few MB/s. Here each ``zstd`` blob (a pack, or a text stored alone) is read,
compressed again at `level` and written back as ``zstdx``: the same raw bytes and hash, a smaller
frame. Reading is unchanged (one frame per pack; zstd decompresses as fast whatever the level), so
nothing else moves: rows pointing into a pack keep their offsets. On the corpus, level 19 takes the
blob data from 4.07 to 3.37 MB (bench/NOTES.md), at ~4 MB/s of one core.

One blob per transaction, so an ingest or a deletion waits for one short UPDATE at most; a blob
deleted meanwhile is simply not updated. The server runs this after the map indexes in the map
preparation loop (app/insight/precompute.py); `irlens compact` does it on demand.

`irlens ingest` writes its packs at `QUICK_LEVEL` and runs the same at that level on what is left
fresh before it returns (``quick=True``): those frames are marked ``zstdm``, which a strong round takes
up again as it takes ``zstd`` ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import zstandard
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.store.blobs import CODEC_QUICK, CODEC_STRONG, CODEC_ZSTD, decompress
from app.store.models import Blob

log = logging.getLogger("irlens")
DEFAULT_LEVEL = 19
# What `irlens ingest` compacts at before it returns: on the sorted, merged packs of a 232 MB GPU
# autotune capture, level 9 stores 64% of the ingest's bytes at ~4.5 ms of CPU per MB of distinct
# text, level 19 55% at ~230 ms (bench/NOTES.md, round 11: the curve).
QUICK_LEVEL = 9
MAX_RAW_BYTES = 64 << 20  # bigger texts (huge logs' non-IR lines) stay as stored: memory, and minutes of CPU
_BATCH = 64  # hashes listed per query


def strong_compressor(level: int, window_log: int = 0, threads: int = 0) -> zstandard.ZstdCompressor:
    """zstd at `level`; at the default level, with a longer target match length (512, level 21's) and
    a shorter search (4 attempts): IR texts repeat long runs of lines, which a longer target finds
    and a short search still reaches. On the corpus's packs: 2.0% fewer bytes than plain level 19 for
    the same CPU (level 21: 2.5% fewer for 1.6-1.8x the CPU; bench/NOTES.md). `window_log`: at least
    this window (a merged pack's size, app/store/compaction.py), 0 for the level's own. `threads`:
    zstd's own compression threads for one frame (0: none)."""
    tuned = {"search_log": 4, "target_length": 512} if level == DEFAULT_LEVEL else {}
    if window_log > zstandard.ZstdCompressionParameters.from_level(level).window_log:
        tuned["window_log"] = window_log
    if threads > 1:
        tuned["threads"] = threads
    params = zstandard.ZstdCompressionParameters.from_level(
        level, write_content_size=True, write_checksum=False, **tuned
    )
    return zstandard.ZstdCompressor(compression_params=params)


def codecs(quick: bool) -> tuple[tuple[str, ...], str]:
    """(the codecs a round takes, the codec it writes): a quick round takes only fresh frames; a
    strong one takes fresh and quick ones, and its frames are never taken again."""
    return ((CODEC_ZSTD,), CODEC_QUICK) if quick else ((CODEC_ZSTD, CODEC_QUICK), CODEC_STRONG)


@dataclass
class Recompressed:
    blobs: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def recompress_blob(session: Session, digest: str, level: int, quick: bool = False) -> tuple[int, int] | None:
    """Recompress one blob the round takes (`codecs`) and commit; (bytes before, after), or None when
    it is gone or done. The window covers the whole text (a quick round's merged pack is 16 MB)."""
    sources, codec = codecs(quick)
    data = session.scalar(select(Blob.data).where(Blob.hash == digest, Blob.codec.in_(sources)))
    session.rollback()  # no read transaction held while compressing (SQLite: no snapshot kept open)
    if data is None:
        return None
    data = bytes(data)
    raw = decompress(data)
    frame = strong_compressor(level, window_log=(len(raw) - 1).bit_length()).compress(raw)
    del raw
    if len(frame) >= len(data):  # already as small: mark it done, keep its bytes
        frame = data
    result = session.execute(
        update(Blob).where(Blob.hash == digest, Blob.codec.in_(sources)).values(codec=codec, data=frame)
    )
    session.commit()
    return (len(data), len(frame)) if result.rowcount else None


def recompress_pending(session_factory: Callable[[], Session], level: int = DEFAULT_LEVEL,
                       stop: Callable[[], bool] = lambda: False, quick: bool = False) -> Recompressed:
    """Recompress every blob the round takes (`codecs`) up to MAX_RAW_BYTES, or until `stop()` says
    so (between blobs)."""
    done = Recompressed()
    if level <= 0:
        return done
    sources, _ = codecs(quick)
    skip: set[str] = set()  # failed ones, not tried again in this round
    while not stop():
        with session_factory() as session:
            hashes = [h for h in session.scalars(
                select(Blob.hash).where(Blob.codec.in_(sources), Blob.size <= MAX_RAW_BYTES)
                .order_by(Blob.hash).limit(_BATCH + len(skip))
            ) if h not in skip]
            session.rollback()
            if not hashes:
                return done
            for digest in hashes:
                if stop():
                    return done
                try:
                    sizes = recompress_blob(session, digest, level, quick)
                except Exception:  # a damaged frame must not stop the others; it stays readable as it was
                    session.rollback()
                    skip.add(digest)
                    log.exception("recompress: blob %s failed", digest)
                    continue
                if sizes is not None:
                    done.blobs += 1
                    done.bytes_before += sizes[0]
                    done.bytes_after += sizes[1]
    return done
