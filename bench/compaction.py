"""Compaction candidates: stored bytes against seconds per MB, on the texts an ingest left fresh.

`python -m bench --only compaction` (or `python -m bench.compaction DB...` on databases made with
`irlens ingest --no-compact`). For each database, the fresh packs are gathered, sorted and cut as
app/store/compaction.py does (the same groupings: only the compressor changes), then every chunk is
compressed by each candidate: zstd levels, long-distance matching with a window the size of the
chunk, two compression threads, a dictionary trained on other captures' texts, and the ingest's own
4 MB packs left as they are. CPU is the compressing thread's (or the process's, for threads); the
machine is shared, so the candidates are measured interleaved, best of `repeats`, and compared as
ratios to the ingest's frames in the same run.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import zstandard

MB = 1e6
# `python -m bench --quick`: the points that draw the curve's shape
QUICK_CANDIDATES = {"level 1", "level 3", "level 7", "level 9", "level 12", "level 9 + long-distance matching",
                    "level 19, tuned (round 9's default)"}


def fresh_chunks(db: Path) -> tuple[list[bytes], list[bytes], int]:
    """(the merged chunks' raw bytes, the ingest's pack frames, raw bytes of every fresh pack) of a
    database whose packs are all fresh (`irlens ingest --no-compact`)."""
    from sqlalchemy import select

    from app.store import compaction
    from app.store.blobs import CODEC_ZSTD
    from app.store.db import Database
    from app.store.models import Blob

    database = Database(f"sqlite:///{db}")
    chunks: list[bytes] = []
    try:
        with database.session() as session:
            tried: set[int] = set()
            frames = [bytes(data) for data, in session.execute(
                select(Blob.data).where(Blob.codec == CODEC_ZSTD, compaction.exists().where(
                    compaction._Slice.pack_id == Blob.id)))]
            while gather := compaction._next_gather(session, tried):
                tried.update(gather)
                members = [compaction._Member(id_, size, pack_id, int(offset)) for id_, size, pack_id, offset in
                           session.execute(select(Blob.id, Blob.size, Blob.pack_id, Blob.data)
                                           .where(Blob.pack_id.in_(gather)))]
                keys = compaction._sort_keys(session, [member.id for member in members])
                for member in members:
                    member.key = (*keys.get(member.id, ("", -1, 0, 0)), member.id)
                members.sort(key=lambda member: member.key)
                for chunk in compaction._chunks(members) if len(members) > 1 else ():
                    chunks.append(compaction._texts(session, chunk))
    finally:
        database.dispose()
    return chunks, frames, sum(len(chunk) for chunk in chunks)


def _parameters(level: int, window_log: int = 0, **extra) -> zstandard.ZstdCompressionParameters:
    if window_log > zstandard.ZstdCompressionParameters.from_level(level).window_log:
        extra["window_log"] = window_log
    return zstandard.ZstdCompressionParameters.from_level(level, write_content_size=True, write_checksum=False,
                                                          **extra)


def _params(level: int, window_log: int = 0, **extra) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(compression_params=_parameters(level, window_log, **extra))


def candidates(dictionary: zstandard.ZstdCompressionDict | None) -> list[tuple[str, object]]:
    """(name, chunk -> frame) for each candidate; each builds its compressor per chunk (a window
    the size of the chunk, as compaction does)."""
    from app.store.recompress import strong_compressor

    def window(raw: bytes) -> int:
        return (len(raw) - 1).bit_length()

    out: list[tuple[str, object]] = []
    for level in (1, 3, 5, 7, 9, 12, 15):
        out.append((f"level {level}", lambda raw, level=level: _params(level, window(raw)).compress(raw)))
    for level in (1, 3, 5, 7, 9):
        out.append((f"level {level} + long-distance matching",
                    lambda raw, level=level: _params(level, window(raw), enable_ldm=True).compress(raw)))
    out.append(("level 3 + long-distance matching, 2 threads",
                lambda raw: _params(3, window(raw), enable_ldm=True, threads=2).compress(raw)))
    out.append(("level 19, tuned (round 9's default)",
                lambda raw: strong_compressor(19, window_log=window(raw)).compress(raw)))
    if dictionary is not None:
        for level in (3, 9):
            out.append((f"level {level} + trained dictionary (110 KB)", lambda raw, level=level: zstandard.ZstdCompressor(
                compression_params=_parameters(level, window(raw)), dict_data=dictionary).compress(raw)))
    return out


def train_dictionary(texts: list[bytes], size: int = 110_000) -> zstandard.ZstdCompressionDict | None:
    """A dictionary trained on samples of other captures' texts (the corpus's), as irlens could ship one."""
    samples = [bytes(text[start : start + 4096]) for text in texts for start in range(0, len(text), 64 * 1024)]
    try:
        return zstandard.train_dictionary(size, samples[:20000])
    except zstandard.ZstdError:
        return None


def measure(dbs: list[Path], repeats: int = 2, dictionary: zstandard.ZstdCompressionDict | None = None,
            names: set[str] | None = None) -> dict:
    """Every candidate over the chunks of these databases (one upload each: compaction gathers an
    upload's packs alone), summed."""
    chunks, frames, raw = [], [], 0
    for db in dbs:
        more = fresh_chunks(db)
        chunks += more[0]
        frames += more[1]
        raw += more[2]
    decompress_start = time.thread_time()
    for frame in frames:
        zstandard.ZstdDecompressor().decompress(frame)
    decompress = time.thread_time() - decompress_start
    rows = [{"name": "as ingested (4 MB packs, level 2, ingest order)", "bytes": sum(map(len, frames)),
             "cpu_seconds": 0.0, "wall_seconds": 0.0}]
    chosen = [(name, fn) for name, fn in candidates(dictionary) if names is None or name in names]
    best: dict[str, list[float]] = {name: [float("inf"), float("inf")] for name, _ in chosen}
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        for name, compress in chosen:  # interleaved: a burst of load hits every candidate alike
            cpu, wall = time.process_time(), time.perf_counter()
            sizes[name] = sum(len(compress(chunk)) for chunk in chunks)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[name] = [min(best[name][0], cpu), min(best[name][1], wall)]
    rows += [{"name": name, "bytes": sizes[name], "cpu_seconds": best[name][0], "wall_seconds": best[name][1]}
             for name, _ in chosen]
    return {"db": ", ".join(db.name for db in dbs), "raw_fresh_bytes": raw, "chunks": len(chunks), "frames": len(frames),
            "decompress_seconds": decompress, "rows": rows}


def table(result: dict, input_bytes: int) -> str:
    raw = result["raw_fresh_bytes"]
    base = result["rows"][0]["bytes"]
    out = [(f"{result['db']}: {raw / MB:.1f} MB of distinct texts in {result['frames']} ingest packs, "
           f"{result['chunks']} merged chunks; input {input_bytes / MB:.1f} MB"),
           "| candidate | blob bytes | vs as ingested | of input | CPU s | s per raw MB |", "|---|---|---|---|---|---|"]
    for row in result["rows"]:
        out.append(f"| {row['name']} | {row['bytes']:,} | {row['bytes'] / base:.3f}× | "
                   f"{row['bytes'] / input_bytes * 100:.2f}% | {row['cpu_seconds']:.2f} | "
                   f"{row['cpu_seconds'] / raw * MB * 1000:.1f} ms |")
    return "\n".join(out)


if __name__ == "__main__":
    # python -m bench.compaction INPUT_BYTES DB... (databases made by `irlens ingest --no-compact`)
    print(table(measure([Path(db) for db in sys.argv[2:]], repeats=int(os.environ.get("REPEATS", "1"))),
                int(sys.argv[1])), flush=True)
