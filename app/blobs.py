"""Content-addressed blob storage: hash first, compress only what is new, insert in batches."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import zstandard
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.models import Blob

_FLUSH_BYTES = 32 << 20
_FLUSH_COUNT = 2000


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _insert_ignoring_duplicates(session: Session):
    """INSERT that skips hashes another ingest stored meanwhile (SQLite and PostgreSQL)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(Blob).on_conflict_do_nothing(index_elements=["hash"])
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(Blob).on_conflict_do_nothing(index_elements=["hash"])
    return insert(Blob)


class BlobWriter:
    """Collects new blobs during one ingest and writes them in the ingest's transaction."""

    def __init__(self, session: Session, level: int = 3) -> None:
        self.session = session
        self.compressor = zstandard.ZstdCompressor(level=level)
        self.seen: set[str] = set()
        self.pending: dict[str, bytes] = {}
        self.pending_bytes = 0
        self.new_blobs = 0
        self.stored_bytes = 0

    def put(self, data: bytes, digest: str | None = None) -> str:
        digest = digest or sha256(data)
        if digest in self.seen:
            return digest
        self.seen.add(digest)
        self.pending[digest] = data
        self.pending_bytes += len(data)
        if self.pending_bytes >= _FLUSH_BYTES or len(self.pending) >= _FLUSH_COUNT:
            self.flush()
        return digest

    def put_compressed(self, digest: str, size: int, compressed: bytes) -> str:
        """Store a blob compressed elsewhere (a log's text, compressed while it streamed)."""
        if digest not in self.seen:
            self.seen.add(digest)
            exists = self.session.scalar(select(Blob.hash).where(Blob.hash == digest))
            if exists is None:
                self.session.execute(
                    _insert_ignoring_duplicates(self.session),
                    [{"hash": digest, "size": size, "codec": "zstd", "data": compressed}],
                )
                self.new_blobs += 1
                self.stored_bytes += len(compressed)
        return digest

    def flush(self) -> None:
        if not self.pending:
            return
        existing = set(
            self.session.scalars(select(Blob.hash).where(Blob.hash.in_(list(self.pending)))).all()
        )
        rows = []
        for digest, data in self.pending.items():
            if digest in existing:
                continue
            compressed = self.compressor.compress(data)
            rows.append({"hash": digest, "size": len(data), "codec": "zstd", "data": compressed})
            self.stored_bytes += len(compressed)
        if rows:
            self.session.execute(_insert_ignoring_duplicates(self.session), rows)
            self.new_blobs += len(rows)
        self.pending.clear()
        self.pending_bytes = 0


class BlobReader:
    """Reads and decompresses blobs, keeping recently used texts (blobs never change)."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.cache: OrderedDict[str, bytes] = OrderedDict()
        self.decompressor = zstandard.ZstdDecompressor()

    def get(self, session: Session, digest: str) -> bytes | None:
        if digest in self.cache:
            self.cache.move_to_end(digest)
            return self.cache[digest]
        blob = session.get(Blob, digest)
        if blob is None:
            return None
        data = self.decompressor.decompress(blob.data) if blob.codec == "zstd" else blob.data
        self.cache[digest] = data
        if len(self.cache) > self.capacity:
            self.cache.popitem(last=False)
        return data

    def text(self, session: Session, digest: str) -> str | None:
        data = self.get(session, digest)
        return None if data is None else data.decode("utf-8", "replace")
