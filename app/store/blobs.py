"""Content-addressed blob storage: hash first, compress only what is new, insert in batches.

Every blob row is addressed by the sha256 of its raw bytes and has one of four codecs:

- ``zstd``: ``data`` is one zstd frame of the whole text.
- ``zstdx``: the same, recompressed at a strong level after ingest (app/store/recompress.py).
- ``zstdm``: the same, merged or recompressed at the quick level that `irlens ingest` compacts at
  before it returns (app/store/compaction.py); the server or `irlens compact` makes it ``zstdx`` later.
- ``none``: ``data`` is the text itself.
- ``zpack``: the text is a slice of a *pack*: ``pack_id`` is the pack's row (``Blob.pack`` its hash),
  ``data`` is ``b"<offset>"`` (ASCII digits; ``b"<pack hash>:<offset>"`` before migration 0010) and
  the text is ``size`` bytes at ``offset`` in the pack blob's raw bytes. A pack is itself an ordinary
  ``zstd`` blob (addressed by the sha256 of its raw bytes) holding several new texts of one ingest
  back to back.

Packs are how storage stays small: consecutive pass snapshots are near copies of each other, and one
zstd frame over a few megabytes of them stores each repeat as a back-reference. A pack is read with one
decompression (no chains); readers cache recent packs, by hash. The garbage collector
(app/store/retention.py) keeps a pack while any ``zpack`` row points into it.

A compacting ingest (`irlens ingest` without `--no-compact`: ``quick_level``) stores 16 MB packs at the
quick level, marked ``zstdm``, in the order the log printed the texts: a 16 MB window reaches the near
copies an autotuned log prints megabytes apart, so this stores within a few percent of merging and
sorting the 4 MB packs afterwards (app/store/compaction.py), with no second pass over them in the
database. The parser never waits for the slow level: texts are compressed fast in 4 MB frames as
always, and those small frames queue for a second worker that compresses four at a time again at
the quick level, mostly while the ingest does its other work (bench/NOTES.md, round 11b).

Writing: `BlobWriter.put` hashes (unless the same bytes object was just hashed: the log scanner hands
out one object for a body equal to a recent one), skips hashes already stored, and collects new texts;
every `PACK_BYTES` of them is checked against the database in one query and compressed on a worker
thread (zstd releases the GIL, so compression overlaps the parsing of the rest of the log).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor

import zstandard
from sqlalchemy import Table, TypeDecorator, insert, select
from sqlalchemy.orm import Session

from app.store.models import Blob, HexHash

PACK_BYTES = 4 << 20  # raw bytes per pack: bigger compresses a little better, reads a little slower
PACK_COUNT = 2000  # most texts per pack (and per existence query)
# A compacting ingest's packs (`BlobWriter(quick_level=...)`): four times larger, so that one frame's
# window reaches the near copies a log prints megabytes apart (another config's same pass).
QUICK_PACK_BYTES = 16 << 20
_STREAM_BYTES = 1 << 20  # a quick pack's texts pass through a buffer this size
MAX_IN_FLIGHT = 2  # packs being compressed at once: bounds the memory an ingest holds
CODEC_ZSTD = "zstd"
CODEC_PACKED = "zpack"
CODEC_STRONG = "zstdx"  # a zstd frame recompressed at a strong level after ingest (app/store/recompress.py)
CODEC_QUICK = "zstdm"  # a zstd frame compacted at the quick level, to be made strong later (app/store/compaction.py)
ZSTD_CODECS = (CODEC_ZSTD, CODEC_STRONG, CODEC_QUICK)
_HASH = HexHash()  # how a hash given for a blob id column is bound (the INSERT looks its id up)


def compression_params() -> zstandard.ZstdCompressionParameters:
    """Level 2 with a 4 MB window: 3.8% of the raw bytes of new snapshots in 4 MB packs, at ~1.2 GB/s
    on this machine. An ingest compresses for speed: the server recompresses every frame at level 19
    in the background afterwards (app/store/recompress.py; `irlens compact` on demand), which stores the
    same texts in fewer bytes than any level fast enough for ingest (lazy2 gave 3.2% at 200 MB/s:
    0.8 s of CPU per 378 MB log, against 0.15 s here)."""
    return zstandard.ZstdCompressionParameters.from_level(
        2, window_log=22, write_content_size=True, write_checksum=False
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def insert_rows(session: Session, table: Table, columns: tuple[str, ...], rows: list[tuple],
                ignore_conflict_on: str | None = None, blob_ids: tuple[str, ...] = ()) -> None:
    """INSERT many rows with the driver's executemany: SQLAlchemy's per-row parameter processing
    costs more than SQLite's insert itself. Values must be plain (int, str, bytes, bool, None).
    `ignore_conflict_on` names a unique column: rows clashing on it are skipped (SQLite, PostgreSQL).
    `blob_ids` names columns holding a blob's id (`snapshots.blob_id`, `blobs.pack_id`), given here as
    the blob's hash (or None): the INSERT looks the id up by the hash's index, row by row."""
    if not rows:
        return
    dialect = session.get_bind().dialect
    # Columns left out get their scalar Python-side default; any other default needs SQLAlchemy.
    missing = [c for c in table.columns if c.name not in columns and not c.primary_key and c.default is not None]
    if dialect.name not in ("sqlite", "postgresql") or not all(c.default.is_scalar for c in missing):
        rows = _blob_ids_looked_up(session, columns, rows, blob_ids)
        statement = insert(table)
        if ignore_conflict_on and dialect.name in ("sqlite", "postgresql"):
            statement = insert_ignoring(session, table, (ignore_conflict_on,))
        session.execute(statement, [dict(zip(columns, row)) for row in rows])
        return
    if missing:
        columns = (*columns, *(c.name for c in missing))
        defaults = tuple(c.default.arg for c in missing)
        rows = [row + defaults for row in rows]
    for i, name in enumerate(columns):  # the driver sees no SQLAlchemy type: hashes as bytes, etc.
        column_type = _HASH if name in blob_ids else table.c[name].type
        if isinstance(column_type, TypeDecorator):
            convert = column_type.process_bind_param
            rows = [(*row[:i], convert(row[i], dialect), *row[i + 1:]) for row in rows]
    quote = dialect.identifier_preparer.quote
    style = dialect.paramstyle
    if style == "qmark":
        marks = ["?" for _ in columns]
    elif style in ("format", "pyformat"):
        marks = ["%s" for _ in columns]
    elif style == "numeric":
        marks = [f":{i + 1}" for i in range(len(columns))]
    else:  # named
        marks = [f":c{i}" for i in range(len(columns))]
        rows = [{f"c{i}": value for i, value in enumerate(row)} for row in rows]  # type: ignore[misc]
    marks = [f"(SELECT id FROM blobs WHERE hash = {mark})" if name in blob_ids else mark
             for name, mark in zip(columns, marks, strict=True)]
    sql = f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) VALUES ({', '.join(marks)})"
    if ignore_conflict_on:
        sql += f" ON CONFLICT ({quote(ignore_conflict_on)}) DO NOTHING"
    session.connection().exec_driver_sql(sql, rows)


def _blob_ids_looked_up(session: Session, columns: tuple[str, ...], rows: list[tuple],
                        blob_ids: tuple[str, ...]) -> list[tuple]:
    """`rows` with the `blob_ids` columns' hashes replaced by ids (ORM path: one query per column)."""
    for i, name in enumerate(columns):
        if name in blob_ids:
            hashes = {row[i] for row in rows if row[i] is not None}
            ids = dict(session.execute(select(Blob.hash, Blob.id).where(Blob.hash.in_(hashes))).all()) if hashes else {}
            rows = [(*row[:i], ids.get(row[i]), *row[i + 1:]) for row in rows]
    return rows


_BLOB_COLUMNS = ("hash", "size", "codec", "data", "pack_id")  # pack_id: the pack's hash


def insert_ignoring(session: Session, model, keys: tuple[str, ...]):
    """INSERT that skips rows whose `keys` another session stored meanwhile (SQLite and
    PostgreSQL; a plain INSERT elsewhere)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(model).on_conflict_do_nothing(index_elements=list(keys))
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(model).on_conflict_do_nothing(index_elements=list(keys))
    return insert(model)


_worker = threading.local()


def _compressor(params: zstandard.ZstdCompressionParameters) -> zstandard.ZstdCompressor:
    """One compressor per worker thread and parameters: a new one would allocate its tables again."""
    cached = getattr(_worker, "compressors", None)
    if cached is None:
        cached = _worker.compressors = {}
    entry = cached.get(id(params))
    if entry is None or entry[0] is not params:
        if len(cached) >= 4:
            cached.clear()
        entry = cached[id(params)] = (params, zstandard.ZstdCompressor(compression_params=params))
    return entry[1]


def _compress_pack(members: list[tuple[str, bytes]], params: zstandard.ZstdCompressionParameters) -> list[dict]:
    """Blob rows for new texts: one zstd blob if alone, else a pack and a `zpack` row per text.

    Runs on the worker thread: hashing and compressing release the GIL."""
    compressor = _compressor(params)
    if len(members) == 1:
        digest, data = members[0]
        return [{"hash": digest, "size": len(data), "codec": CODEC_ZSTD, "data": compressor.compress(data), "pack_id": None}]
    raw = b"".join(data for _, data in members)
    pack = sha256(raw)
    rows = [{"hash": pack, "size": len(raw), "codec": CODEC_ZSTD, "data": compressor.compress(raw), "pack_id": None}]
    offset = 0
    for digest, data in members:
        rows.append(
            {"hash": digest, "size": len(data), "codec": CODEC_PACKED, "data": b"%d" % offset, "pack_id": pack}
        )
        offset += len(data)
    return rows


def _fast_frame(members: list[tuple[str, bytes]], params: zstandard.ZstdCompressionParameters,
                ) -> tuple[list[tuple[str, int]], bytes]:
    """(the texts' hashes and sizes, one fast frame of them back to back): what waits for a quick
    pack, at a few percent of the texts' bytes."""
    sizes = [(digest, len(data)) for digest, data in members]
    if len(members) == 1:
        return sizes, _compressor(params).compress(members[0][1])
    # Streamed: joining the texts first made a 4 MB bytes object per pack on this thread, and those,
    # freed and made again between the quick packs' buffers, grew its heap by ~40 MB (bench/NOTES.md, 12).
    compressor = _compressor(params).compressobj(size=sum(size for _, size in sizes))
    out = [compressor.compress(data) for _, data in members]
    out.append(compressor.flush())
    return sizes, b"".join(out)


def _quick_pack(frames: list[tuple[list[tuple[str, int]], bytes]], params: zstandard.ZstdCompressionParameters,
                ) -> list[dict]:
    """Blob rows for a group of fast frames: their texts back to back in one ``zstdm`` pack (or
    blob, if one text), compressed once at the quick level with a window as large as the pack."""
    sizes = [member for members, _ in frames for member in members]
    total = sum(size for _, size in sizes)
    # Streamed through one 1 MB buffer: the texts are held once (in zstd's window), and no large
    # allocation is made per frame (4 MB ones, freed and made again, grew this thread's heap by ~50 MB).
    compressor = _compressor(params).compressobj(size=total)
    decompressor = _thread_decompressor()
    buffer = bytearray(_STREAM_BYTES)
    view = memoryview(buffer)
    hasher, out = hashlib.sha256(), []
    for _, fast in frames:
        with decompressor.stream_reader(fast) as reader:
            while read := reader.readinto(buffer):
                hasher.update(view[:read])
                out.append(compressor.compress(view[:read]))
    out.append(compressor.flush())
    frame = b"".join(out)
    if len(sizes) == 1:
        return [{"hash": sizes[0][0], "size": total, "codec": CODEC_QUICK, "data": frame, "pack_id": None}]
    pack = hasher.hexdigest()
    rows = [{"hash": pack, "size": total, "codec": CODEC_QUICK, "data": frame, "pack_id": None}]
    offset = 0
    for digest, size in sizes:
        rows.append({"hash": digest, "size": size, "codec": CODEC_PACKED, "data": b"%d" % offset, "pack_id": pack})
        offset += size
    return rows


class BlobWriter:
    """Collects new blobs during one ingest and writes them in the ingest's transaction."""

    def __init__(self, session: Session, level: int | None = None, quick_level: int | None = None) -> None:
        """`quick_level`: store packs of up to QUICK_PACK_BYTES at this level, marked ``zstdm`` (a
        compacting ingest: app/store/compaction.py has nothing left to merge). Texts are first
        compressed fast in 4 MB frames, as always, so that the parser never waits for the slow level:
        those small frames queue for a second worker, which decompresses four at a time and compresses
        them again at `quick_level`, mostly while the ingest does its other work."""
        self.session = session
        self.params = (
            compression_params() if level is None
            else zstandard.ZstdCompressionParameters.from_level(level, write_content_size=True)
        )
        self.quick_params = None
        if quick_level:
            window = max(zstandard.ZstdCompressionParameters.from_level(quick_level).window_log,
                         (QUICK_PACK_BYTES - 1).bit_length())
            # 512K-entry tables, 6-byte matches, 8 attempts: within 0.1-0.6% of level 9's own bytes on
            # the GPU capture and the bench log, for 6-17% less CPU and less memory (bench/NOTES.md, 11b)
            tuned = {"hash_log": 19, "chain_log": 19, "min_match": 6, "search_log": 3} if quick_level == 9 else {}
            self.quick_params = zstandard.ZstdCompressionParameters.from_level(
                quick_level, window_log=window, write_content_size=True, write_checksum=False, **tuned)
        self.packs = 0
        self.seen: set[str] = set()
        self.pending: list[tuple[str, bytes]] = []
        self.pending_bytes = 0
        self.new_blobs = 0
        self.stored_bytes = 0
        self._recent: OrderedDict[int, tuple[bytes, str]] = OrderedDict()  # id(data) -> (data, digest)
        self._pool: ThreadPoolExecutor | None = None
        self._in_flight: deque[Future] = deque()
        # quick_level: fast frames gathered for the next quick pack, and the quick packs being compressed
        self._group: list[tuple[list[tuple[str, int]], bytes]] = []
        self._group_bytes = 0
        self._quick_pool: ThreadPoolExecutor | None = None
        self._quick: deque[Future] = deque()

    def digest(self, data: bytes) -> str:
        """sha256 of `data`, remembered for the last few bytes objects (by identity, not by value)."""
        recent = self._recent.get(id(data))
        if recent is not None and recent[0] is data:
            return recent[1]
        digest = sha256(data)
        self._recent[id(data)] = (data, digest)
        if len(self._recent) > 16:
            self._recent.popitem(last=False)
        return digest

    def put(self, data: bytes, digest: str | None = None) -> str:
        digest = digest or self.digest(data)
        if digest in self.seen:
            return digest
        self.seen.add(digest)
        self.pending.append((digest, data))
        self.pending_bytes += len(data)
        if self.pending_bytes >= PACK_BYTES or len(self.pending) >= PACK_COUNT:
            self._seal()
        return digest

    def put_compressed(self, digest: str, size: int, compressed: bytes) -> str:
        """Store a blob compressed elsewhere (a log's text, compressed while it streamed)."""
        if digest not in self.seen:
            self.seen.add(digest)
            exists = self.session.scalar(select(Blob.hash).where(Blob.hash == digest))
            if exists is None:
                self.session.execute(
                    insert_ignoring(self.session, Blob, ("hash",)),
                    [{"hash": digest, "size": size, "codec": CODEC_ZSTD, "data": compressed, "pack_id": None}],
                )
                self.new_blobs += 1
                self.stored_bytes += len(compressed)
        return digest

    def _seal(self) -> None:
        """Hand the pending texts that the database lacks to the worker as one pack."""
        if not self.pending:
            return
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        existing = self._existing([digest for digest, _ in pending])
        members = [item for item in pending if item[0] not in existing] if existing else pending
        if members:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="irlens-blobs")
            if self.quick_params is None:
                self.packs += 1
                self._in_flight.append(self._pool.submit(_compress_pack, members, self.params))
            else:
                self._in_flight.append(self._pool.submit(_fast_frame, members, self.params))
        while self._in_flight and (len(self._in_flight) > MAX_IN_FLIGHT or self._in_flight[0].done()):
            self._done(self._in_flight.popleft().result())

    def _done(self, result) -> None:
        """A fast worker's result: blob rows to write, or (quick_level) a fast frame to gather."""
        if self.quick_params is None:
            self._store(result)
            return
        self._group.append(result)
        self._group_bytes += sum(size for _, size in result[0])
        if self._group_bytes >= QUICK_PACK_BYTES:
            self._send_group()
        while self._quick and self._quick[0].done():
            self._store(self._quick.popleft().result())

    def _send_group(self) -> None:
        if not self._group:
            return
        if self._quick_pool is None:
            self._quick_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="irlens-blobs-quick")
        self.packs += 1
        self._quick.append(self._quick_pool.submit(_quick_pack, self._group, self.quick_params))
        self._group, self._group_bytes = [], 0

    def _existing(self, digests: list[str]) -> set[str]:
        """Which of these hashes the database holds already (one query; plain SQL on SQLite and
        PostgreSQL, where SQLAlchemy's expanding IN costs more than the lookup)."""
        dialect = self.session.get_bind().dialect
        if dialect.name == "sqlite" or (dialect.name == "postgresql" and dialect.paramstyle in ("format", "pyformat")):
            mark = "?" if dialect.paramstyle == "qmark" else "%s"
            sql = f"SELECT hash FROM blobs WHERE hash IN ({', '.join(mark for _ in digests)})"
            found = self.session.connection().exec_driver_sql(sql, tuple(map(bytes.fromhex, digests)))
            return {bytes(row[0]).hex() for row in found}
        return set(self.session.scalars(select(Blob.hash).where(Blob.hash.in_(digests))))

    def _store(self, rows: list[dict]) -> None:
        insert_rows(self.session, Blob.__table__, _BLOB_COLUMNS,  # the pack first: its slices look its id up
                    [tuple(row[c] for c in _BLOB_COLUMNS) for row in rows], ignore_conflict_on="hash",
                    blob_ids=("pack_id",))
        self.new_blobs += sum(1 for row in rows if row["codec"] != CODEC_PACKED)
        self.stored_bytes += sum(len(row["data"]) for row in rows)

    def flush(self) -> None:
        """Write every blob put so far (waits for the worker)."""
        self._seal()
        while self._in_flight:
            self._done(self._in_flight.popleft().result())
        self._send_group()
        while self._quick:
            self._store(self._quick.popleft().result())

    def close(self) -> None:
        """Drop unwritten work and stop the worker (after a failed ingest, or once flushed)."""
        for future in (*self._in_flight, *self._quick):
            future.cancel()
        self._in_flight.clear()
        self._quick.clear()
        self.pending.clear()
        self._group.clear()
        for name in ("_pool", "_quick_pool"):
            pool = getattr(self, name)
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
                setattr(self, name, None)

    def __del__(self) -> None:
        for name in ("_pool", "_quick_pool"):
            pool = self.__dict__.get(name)
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)


class _PackCache:
    """Decompressed packs, bounded by bytes and shared by every reader of the process."""

    def __init__(self, capacity_bytes: int = 64 << 20) -> None:  # four merged packs (app/store/compaction.py)
        self.capacity_bytes = capacity_bytes
        self.packs: OrderedDict[str, bytes] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, digest: str) -> bytes | None:
        with self.lock:
            data = self.packs.get(digest)
            if data is not None:
                self.packs.move_to_end(digest)
            return data

    def add(self, digest: str, data: bytes) -> None:
        with self.lock:
            if digest in self.packs or len(data) > self.capacity_bytes:
                return
            self.packs[digest] = data
            self.size += len(data)
            while self.size > self.capacity_bytes:
                _, dropped = self.packs.popitem(last=False)
                self.size -= len(dropped)


PACKS = _PackCache()


def blob_row(session: Session, digest: str) -> Blob | None:
    """The blob stored under this hash."""
    return session.scalars(select(Blob).where(Blob.hash == digest)).first()


_decompressors = threading.local()  # a ZstdDecompressor is not safe to share between threads


def _thread_decompressor() -> zstandard.ZstdDecompressor:
    decompressor = getattr(_decompressors, "decompressor", None)
    if decompressor is None:
        decompressor = _decompressors.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def decompress(data: bytes) -> bytes:
    """A zstd blob's raw bytes."""
    decompressor = _thread_decompressor()
    # Log texts are streamed frames without a content size; stream those.
    if zstandard.frame_content_size(data) < 0:
        return decompressor.decompressobj(read_across_frames=True).decompress(data)
    return decompressor.decompress(data)


class BlobReader:
    """Reads and decompresses blobs, keeping recently used texts (blobs never change)."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.cache: OrderedDict[str, bytes] = OrderedDict()
        self.lock = threading.Lock()

    def _raw(self, session: Session, blob: Blob) -> bytes:
        if blob.codec in ZSTD_CODECS:
            return decompress(blob.data)
        if blob.codec == CODEC_PACKED:
            pack_hash, offset, blob_pack_id = blob.pack, bytes(blob.data), blob.pack_id
            pack = PACKS.get(pack_hash)
            if pack is None:
                pack_blob = blob_row(session, pack_hash)
                if pack_blob is None:
                    # Compaction (app/store/compaction.py) may have moved the text since its row was read.
                    moved = session.scalars(select(Blob).where(Blob.hash == blob.hash)
                                            .execution_options(populate_existing=True)).first()
                    if moved is not None and moved.pack_id != blob_pack_id:
                        return self._raw(session, moved)
                    raise LookupError(f"blob {blob.hash} points into pack {pack_hash}, which is missing")
                pack = self._raw(session, pack_blob)
                PACKS.add(pack_hash, pack)
            start = int(offset)
            return pack[start : start + blob.size]
        return bytes(blob.data)

    def get(self, session: Session, digest: str) -> bytes | None:
        with self.lock:
            data = self.cache.get(digest)
            if data is not None:
                self.cache.move_to_end(digest)
                return data
        blob = blob_row(session, digest)
        if blob is None:
            return None
        data = self._raw(session, blob)
        with self.lock:
            self.cache[digest] = data
            while len(self.cache) > self.capacity:
                self.cache.popitem(last=False)
        return data

    def text(self, session: Session, digest: str) -> str | None:
        data = self.get(session, digest)
        return None if data is None else data.decode("utf-8", "replace")
