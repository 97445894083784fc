"""How a Python line is labelled beside the IR: its file's short name and a stable colour."""

from __future__ import annotations

import zlib

PALETTE_SIZE = 12  # --hl-1 .. --hl-12 in static/app.css


def line_colour(file: str, line: int) -> int:
    """A stable palette index (1..12) for a Python line: the same line has the same colour in
    every pass and every page; neighbouring lines of a file differ. Consecutive lines step 5
    palette entries (coprime with 12), so neighbours get hues far apart, not adjacent shades."""
    base = file.replace("\\", "/").rsplit("/", 1)[-1]
    return (zlib.crc32(base.encode()) + 5 * line) % PALETTE_SIZE + 1


def basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
