"""Compaction: an ingest's packs merged into larger ones, with like texts side by side.

An ingest stores its new texts in 4 MB packs, in the order it met them, compressed for speed
(app/store/blobs.py). Compaction, which the server runs in the background after each upload and
`irlens compact` on demand, rewrites what is fresh (codec ``zstd``):

- The fresh packs are gathered in the order they were stored, up to `GATHER_BYTES` of texts. Their
  texts are sorted by kernel, stage, pass and compilation, so that the same pass of the same kernel
  from every compilation of the gather sits side by side (a cache folder's stage files after that
  stage's passes), cut into packs of up to `MERGED_BYTES`, and compressed at the strong level with a
  window as large as the pack: a text then finds its near copies however far apart the log printed
  them. Each merged pack is written with its slices' new pack and offset in one transaction; the old
  packs go once no slice points into them. Texts, hashes and sizes do not change, nor does any row
  that names a text.
- Texts stored alone (a log's non-IR lines, a text too big for a pack) are recompressed as they are
  (app/store/recompress.py), as is any pack a merge could not take.

Strong packs are never merged again: each text is compressed once at the strong level whatever the
database holds.

`irlens ingest` writes its packs compacted as it goes (16 MB, level `QUICK_LEVEL`, ``zstdm``:
app/store/blobs.py), then runs a *quick* round here before it returns (``quick=True``, each pack
compressed on two of zstd's threads) for whatever is still fresh: the log's texts stored alone, packs
an earlier `--no-compact` left. The server's background round and `irlens compact` are strong: they
merge fresh packs as above and recompress quick ones in place (app/store/recompress.py). On a 232 MB
GPU autotune capture the ingest's own 16 MB packs store 67% of what `--no-compact` stores (a quick
merge of its packs: 64%, for a second pass over them on the critical path); the strong round 55%,
for ~37 s (bench/NOTES.md, round 11). On the shared corpus this stores the texts in 11% fewer bytes than recompressing
each 4 MB pack alone; a cold read decompresses up to 16 MB instead of 4 (2 ms p50, 6 ms at most,
against 1.4 and 2.5 ms; bench/NOTES.md, round 8).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import bindparam, delete, exists, func, select, update
from sqlalchemy.orm import Session, aliased

from app.store.blobs import CODEC_PACKED, CODEC_ZSTD, decompress, sha256
from app.store.models import STAGE_NAMES, Artifact, Blob, Compilation, Snapshot
from app.store.recompress import DEFAULT_LEVEL, Recompressed, codecs, recompress_pending, strong_compressor

log = logging.getLogger("irlens")
MERGED_BYTES = 16 << 20  # texts per merged pack: 4x an ingest's packs; a cold read decompresses it whole
GATHER_BYTES = 64 << 20  # fresh texts sorted together: ~4x less gain when only 16 MB are (bench/NOTES.md)
_CHUNK = 500  # ids per IN (...)
# A quick round compresses each merged pack on two threads (zstd's own, in one frame: the same bytes
# within 0.2%). Two packs compressed at once, or the next one gathered meanwhile, cost ~40 MB more
# peak RSS for the same CPU (bench/NOTES.md, round 11).
THREADS = 2

_STAGE_RANK = {name: rank for rank, name in enumerate(STAGE_NAMES)}
# A cache folder's file sorts after the passes of the stage it holds, assembly after every stage,
# metadata and the rest last.
_LAST = len(STAGE_NAMES)
_FILE_RANK = {"ttir": _STAGE_RANK["ttir"], "ttgir": _STAGE_RANK["ttgir"], "glir": _STAGE_RANK["ttgir"],
              "source": _STAGE_RANK["ttgir"], "llir": _STAGE_RANK["llvm-ir"], "ptx": _LAST, "amdgcn": _LAST}
_AFTER_PASSES = 1 << 30
_Slice = aliased(Blob)


@dataclass
class _Member:
    id: int
    size: int
    pack_id: int
    offset: int
    key: tuple = ()


def compact_pending(session_factory: Callable[[], Session], level: int = DEFAULT_LEVEL,
                    stop: Callable[[], bool] = lambda: False, quick: bool = False) -> Recompressed:
    """Merge every fresh pack, then recompress the texts left that the round takes (quick: fresh
    ones; strong: fresh and quick ones), until `stop()` says so (checked between merged packs and
    between texts)."""
    done = Recompressed()
    if level <= 0:
        return done
    # Packs gathered once are not gathered again in this round: one a merge failed on, or left with
    # a single text (a merge stopped half-way), is recompressed alone below.
    tried: set[int] = set()
    while not stop():
        with session_factory() as session:
            gather = _next_gather(session, tried)
            session.rollback()
            if not gather:
                break
            tried.update(gather)
            try:
                merge_packs(session, gather, level, stop, done, quick)
            except Exception:  # a damaged frame must not stop the others; it stays readable as it was
                session.rollback()
                log.exception("compact: merging packs %s failed", gather)
    rest = recompress_pending(session_factory, level, stop, quick)
    return Recompressed(done.blobs + rest.blobs, done.bytes_before + rest.bytes_before,
                        done.bytes_after + rest.bytes_after)


def _next_gather(session: Session, tried: set[int]) -> list[int]:
    """The oldest fresh packs not tried yet, up to GATHER_BYTES of texts (one at least)."""
    fresh = (select(Blob.id, Blob.size)
             .where(Blob.codec == CODEC_ZSTD, exists().where(_Slice.pack_id == Blob.id))
             .order_by(Blob.id))
    gather, total = [], 0
    for pack_id, size in session.execute(fresh):
        if pack_id in tried:
            continue
        if gather and total + size > GATHER_BYTES:
            break
        gather.append(pack_id)
        total += size
    return gather


_MOVE = update(Blob.__table__).where(
    Blob.__table__.c.id == bindparam("member"), Blob.__table__.c.pack_id == bindparam("old"),
).values(pack_id=bindparam("new"), data=bindparam("offset"))


def merge_packs(session: Session, pack_ids: list[int], level: int = DEFAULT_LEVEL,
                stop: Callable[[], bool] = lambda: False, done: Recompressed | None = None,
                quick: bool = False) -> Recompressed:
    """Rewrite the texts of these fresh packs as merged packs (quick or strong), committing each
    merged pack with its slices' moves, until `stop()` says so; then drop the old packs left empty. A
    text not moved yet stays readable where it was (a later round gathers its pack again)."""
    done = done if done is not None else Recompressed()
    codec = codecs(quick)[1]
    members = [_Member(id_, size, pack_id, int(offset)) for id_, size, pack_id, offset in session.execute(
        select(Blob.id, Blob.size, Blob.pack_id, Blob.data)
        .where(Blob.pack_id.in_(pack_ids), Blob.codec == CODEC_PACKED))]
    keys = _sort_keys(session, [member.id for member in members])
    frame_sizes = dict(session.execute(select(Blob.id, func.length(Blob.data))
                                       .where(Blob.id.in_(pack_ids), Blob.codec == CODEC_ZSTD)).all())
    session.rollback()  # no read transaction held while compressing
    for member in members:
        member.key = (*keys.get(member.id, ("", -1, 0, 0)), member.id)
    members.sort(key=lambda member: member.key)
    threads = THREADS if quick else 0  # a strong round runs beside the server's pages: one core
    for chunk in _chunks(members) if len(members) > 1 else ():
        if stop():
            break
        _write_merged(session, chunk, _compress(_texts(session, chunk), level, threads), codec, done)
    # The old packs no slice points into any more (a concurrent deletion may have taken some).
    emptied = session.scalars(select(Blob.id).where(Blob.id.in_(list(frame_sizes)), Blob.codec == CODEC_ZSTD,
                                                    ~exists().where(_Slice.pack_id == Blob.id))).all()
    session.execute(delete(Blob).where(Blob.id.in_(emptied), ~exists().where(_Slice.pack_id == Blob.id)))
    session.commit()
    done.blobs += len(emptied)
    done.bytes_before += sum(frame_sizes[pack_id] for pack_id in emptied)
    return done


def _compress(raw: bytearray, level: int, threads: int = 0) -> tuple[str, int, bytes]:
    """(hash, size, frame) of a merged pack: a window as large as the pack."""
    compressor = strong_compressor(level, window_log=(len(raw) - 1).bit_length(), threads=threads)
    return sha256(raw), len(raw), compressor.compress(raw)


def _write_merged(session: Session, chunk: list[_Member], compressed: tuple[str, int, bytes], codec: str,
                  done: Recompressed) -> None:
    """Insert a merged pack and move its slices into it, in one transaction."""
    digest, size, frame = compressed
    pack = Blob(hash=digest, size=size, codec=codec, data=frame)
    session.add(pack)
    session.flush()
    moves, offset = [], 0
    for member in chunk:
        moves.append({"member": member.id, "old": member.pack_id, "new": pack.id, "offset": b"%d" % offset})
        offset += member.size
    session.execute(_MOVE, moves)
    session.commit()
    done.bytes_after += len(frame)


def _texts(session: Session, chunk: list[_Member]) -> bytearray:
    """The chunk's texts back to back, copied once into one buffer from each old pack, decompressed
    once (one at a time): 16 MB held, not a copy per text and a joined copy."""
    by_pack: dict[int, list[tuple[_Member, int]]] = {}
    position = 0
    for member in chunk:
        by_pack.setdefault(member.pack_id, []).append((member, position))
        position += member.size
    out = bytearray(position)
    for pack_id, members in by_pack.items():
        frame = session.scalar(select(Blob.data).where(Blob.id == pack_id))
        session.rollback()
        if frame is None:
            raise LookupError(f"pack {pack_id} is missing")
        raw = memoryview(decompress(bytes(frame)))
        del frame
        for member, at in members:
            out[at : at + member.size] = raw[member.offset : member.offset + member.size]
        raw.release()
    return out


def _chunks(members: list[_Member]) -> list[list[_Member]]:
    """`members` (two at least) cut into runs of up to MERGED_BYTES, never a run of one (a pack of
    one text would have that text's own hash): a run takes a second text whatever its size, and a
    lone last text joins the run before it."""
    runs: list[list[_Member]] = []
    current: list[_Member] = []
    total = 0
    for member in members:
        if len(current) > 1 and total + member.size > MERGED_BYTES:
            runs.append(current)
            current, total = [], 0
        current.append(member)
        total += member.size
    if len(current) == 1 and runs:
        runs[-1].extend(current)
    elif current:
        runs.append(current)
    return runs


def _sort_keys(session: Session, member_ids: list[int]) -> dict[int, tuple]:
    """(kernel, stage rank, pass index, compilation) of each text, from the first snapshot or cache
    file naming it (the smallest, if several do)."""
    keys: dict[int, tuple] = {}

    def keep(blob_id: int, key: tuple) -> None:
        if blob_id not in keys or key < keys[blob_id]:
            keys[blob_id] = key

    for start in range(0, len(member_ids), _CHUNK):
        chunk = member_ids[start : start + _CHUNK]
        for blob_id, kernel, stage, index, compilation in session.execute(
            select(Snapshot.blob_id, Compilation.kernel, Snapshot.stage, Snapshot.index, Compilation.pk)
            .join(Compilation, Compilation.pk == Snapshot.compilation_pk).where(Snapshot.blob_id.in_(chunk))
        ):
            keep(blob_id, (kernel or "", _STAGE_RANK.get(stage, _LAST), index, compilation))
        for blob_id, kernel, kind, compilation in session.execute(
            select(Blob.id, Compilation.kernel, Artifact.kind, Compilation.pk)
            .join(Artifact, Artifact.blob == Blob.hash).join(Compilation, Compilation.pk == Artifact.compilation_pk)
            .where(Blob.id.in_(chunk))
        ):
            keep(blob_id, (kernel or "", _FILE_RANK.get(kind, _LAST + 1), _AFTER_PASSES, compilation))
    return keys
