"""A bounded, thread-safe cache of diff results by (blob A, blob B, compared options)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from app.diff.result import DiffResult


class DiffCache:
    """Diff results by (blob A, blob B, compared options), least recently used first out.

    Blobs never change, so entries never go stale. Bounded by count and by the text held
    (a 21,000-line LLVM-dialect snapshot is 7 MB); the newest entry always stays.
    """

    def __init__(self, capacity: int = 32, max_bytes: int = 192 << 20) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, tuple[DiffResult, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def _size(result: DiffResult) -> int:
        lines = len(result.a_lines) + len(result.b_lines)
        text = sum(map(len, result.a_lines)) + sum(map(len, result.b_lines))
        return text + 64 * lines + 80 * len(result.segments)

    def get(self, key: tuple, compute: Callable[[], DiffResult]) -> DiffResult:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0]
            self.misses += 1
        result = compute()  # outside the lock: other diffs go on meanwhile
        size = self._size(result)
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (result, size)
                self._bytes += size
            while len(self._entries) > 1 and (
                len(self._entries) > self.capacity or self._bytes > self.max_bytes
            ):
                _, (_, old_size) = self._entries.popitem(last=False)
                self._bytes -= old_size
        return result

    def __len__(self) -> int:
        return len(self._entries)
