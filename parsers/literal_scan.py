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

__all__ = ["COMPILED", "LiteralSet"]


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


def _collect(index: int, start: int, end: int, flags: int, hits: set[int]) -> None:
    hits.add(index)


def _hs_literal(literal: bytes) -> bytes:
    """A hyperscan pattern matching exactly `literal` (every byte escaped as \\xHH)."""
    return b"".join(b"\\x%02x" % byte for byte in literal)
