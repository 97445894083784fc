"""JSON read with every number usable: NaN, Infinity, 1e400 (read as inf) and integers beyond 64
bits come back as None, and are listed, so that the caller can name the file in a warning.

Python's json module accepts all of those, but a stored JSON column must stay valid JSON
(PostgreSQL refuses NaN; our responses are written with allow_nan=False), a count of 1e400 cannot
become an integer, and an integer column holds 64 bits at most. One value is refused, never the
file: the rest of it is read as usual.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["INT_LIMIT", "dropped_note", "loads", "usable"]

INT_LIMIT = 2**63 - 1  # what a 64-bit integer column (and SQLite's INTEGER) holds


def usable(value: Any) -> bool:
    """A number that JSON and a 64-bit column can hold (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    return -INT_LIMIT - 1 <= value <= INT_LIMIT


def loads(data: bytes | str) -> tuple[Any, list[str]]:
    """The document, and the text of each number it held that was replaced by None. Raises what
    json.loads raises for text that is not JSON."""
    dropped: list[str] = []

    def constant(name: str) -> None:  # NaN, Infinity, -Infinity
        dropped.append(name)

    def real(text: str) -> float | None:
        value = float(text)
        if math.isfinite(value):
            return value
        dropped.append(text)
        return None

    def integer(text: str) -> int | None:
        if len(text) > 20:  # longer than any 64-bit integer: don't even convert (a 1 MB digit run)
            dropped.append(text[:24] + "…")
            return None
        value = int(text)
        if usable(value):
            return value
        dropped.append(text)
        return None

    return json.loads(data, parse_constant=constant, parse_float=real, parse_int=integer), dropped


def dropped_note(dropped: list[str]) -> str | None:
    """"3 numbers JSON or a 64-bit column cannot hold (NaN, 1e400) were left out" or None."""
    if not dropped:
        return None
    shown = sorted(set(dropped))[:4]
    more = "…" if len(set(dropped)) > 4 else ""
    count = len(dropped)
    return (f"{count} number{'s' if count != 1 else ''} not finite or out of range "
            f"({', '.join(shown)}{more}) left out")
