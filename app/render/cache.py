"""The render caches: every result here is a function of a blob's text and kind, and blobs never
change, so each is computed once per ``(blob hash, kind)`` and kept in a size-bounded LRU."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from app.store.blobs import BlobReader

# Texts for pages are read through this reader; it keeps only a couple of texts, since the
# rendered results are what is cached (a snapshot can be megabytes).
blob_reader = BlobReader(capacity=4)


class SizedLRU:
    """An LRU bounded by the total size of its values (and by a count), safe across threads."""

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.items: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> Any | None:
        with self.lock:
            entry = self.items.get(key)
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            self.items.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, value: Any, size: int) -> None:
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self.items[key] = (value, size)
            self.bytes += size
            while len(self.items) > 1 and (self.bytes > self.max_bytes or len(self.items) > self.max_items):
                _, (_, old_size) = self.items.popitem(last=False)
                self.bytes -= old_size

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.bytes = 0


_SOURCES = SizedLRU(max_bytes=32 << 20, max_items=256)
_OPS = SizedLRU(max_bytes=16 << 20, max_items=100_000)
_INDEXES = SizedLRU(max_bytes=64 << 20, max_items=4096)
_ANALYSES = SizedLRU(max_bytes=256 << 20, max_items=1024)
_PAGES = SizedLRU(max_bytes=384 << 20, max_items=8192)


def clear_caches() -> None:
    """Forget every cached result (tests use this to time a cold render)."""
    for cache in (_SOURCES, _OPS, _INDEXES, _ANALYSES, _PAGES):
        cache.clear()


def cache_stats() -> dict[str, dict[str, int]]:
    return {
        name: {"items": len(cache.items), "bytes": cache.bytes, "hits": cache.hits, "misses": cache.misses}
        for name, cache in (
            ("sources", _SOURCES),
            ("ops", _OPS),
            ("indexes", _INDEXES),
            ("analyses", _ANALYSES),
            ("pages", _PAGES),
        )
    }
