"""Which of a few literal byte strings a text holds, in one pass over it.

The ingest asks this of every dump body several times (autotuning output mixed into a dump, pieces
of a broken banner, inline assembly, layout attributes): one `in` per literal is one pass over the
text each, at ~1.5 GB/s. Hyperscan (the optional `hyperscan` wheel: `pip install irlens[fast]`)
finds all of them in one pass at several GB/s. Without the wheel, or with IRLENS_PURE_SCAN=1 in the
environment (the tests run both), the same answer comes from `in`.
"""

from __future__ import annotations

import os
import threading

__all__ = ["COMPILED", "LiteralSet", "SpanScan"]


def _hyperscan():
    if os.environ.get("IRLENS_PURE_SCAN", "") not in ("", "0"):
        return None
    try:
        import hyperscan
    except ImportError:  # the wheel is optional: the pure path gives the same answers
        return None
    return hyperscan


_HS = _hyperscan()
COMPILED = _HS is not None  # whether the compiled scanner is in use (for the bench and tests)


class LiteralSet:
    """`found(data)`: the set of the literals' indexes that occur in `data`."""

    def __init__(self, literals: list[bytes] | tuple[bytes, ...], compiled: bool | None = None) -> None:
        """`compiled`: False forces the pure path (tests compare the two); None takes the module's."""
        self.literals = tuple(literals)
        self._db = None
        self._local = threading.local()  # a scratch per thread: hyperscan's scratch is not shared
        if _HS is not None and self.literals and compiled is not False:
            db = _HS.Database(mode=_HS.HS_MODE_BLOCK)
            db.compile(
                expressions=[_hs_literal(literal) for literal in self.literals],
                ids=list(range(len(self.literals))),
                elements=len(self.literals),
                flags=[_HS.HS_FLAG_SINGLEMATCH] * len(self.literals),  # each reported once
            )
            self._db = db

    def found(self, data: bytes) -> set[int]:
        if self._db is None:
            return {index for index, literal in enumerate(self.literals) if literal in data}
        hits: set[int] = set()
        if len(data) < len(min(self.literals, key=len)):
            return hits
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _HS.Scratch(self._db)
        self._db.scan(data, match_event_handler=_collect, context=hits, scratch=scratch)
        return hits

    def any(self, data: bytes) -> bool:
        return bool(self.found(data))

    @property
    def compiled(self) -> bool:
        return self._db is not None


class SpanScan:
    """Where regexes match, in one pass: `spans(data)[i]` lists (start, end) of pattern i's matches
    (leftmost start), or of its first match only where `once[i]`. Hyperscan only: `create` gives None
    without it, and the caller keeps its `re` path. A pattern must mean the same to hyperscan and to
    `re` and match no two overlapping spans (then the spans are those of `re.finditer`)."""

    def __init__(self, patterns: list[bytes], once: list[bool]) -> None:
        self.count = len(patterns)
        self._local = threading.local()
        flags = [_HS.HS_FLAG_SINGLEMATCH if single else _HS.HS_FLAG_SOM_LEFTMOST for single in once]
        self._db = _HS.Database(mode=_HS.HS_MODE_BLOCK)
        self._db.compile(expressions=list(patterns), ids=list(range(self.count)), elements=self.count,
                         flags=flags)

    @classmethod
    def create(cls, patterns: list[bytes], once: list[bool]) -> SpanScan | None:
        return cls(patterns, once) if _HS is not None else None

    def spans(self, data: bytes) -> list[list[tuple[int, int]]]:
        found: list[list[tuple[int, int]]] = [[] for _ in range(self.count)]
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _HS.Scratch(self._db)
        self._db.scan(data, match_event_handler=_span, context=found, scratch=scratch)
        return found


def _collect(index: int, start: int, end: int, flags: int, hits: set[int]) -> None:
    hits.add(index)


def _span(index: int, start: int, end: int, flags: int, found: list) -> None:
    found[index].append((start, end))


def _hs_literal(literal: bytes) -> bytes:
    """A hyperscan pattern matching exactly `literal` (every byte escaped as \\xHH)."""
    return b"".join(b"\\x%02x" % byte for byte in literal)
