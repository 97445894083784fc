"""Which lines of a Python source pane a snapshot page lays out at once, and which it defers.

The pane opens scrolled to the first line the IR maps to, so only the lines around it are seen at
first. Laying out every line of the file before the first paint cost the largest corpus snapshot's
first visit ~180 ms for a 253-line file (bench/NOTES.md, round 7). The page therefore lays out a
window around that line and sends the others as inert ``<template>`` blocks of the same height,
which static/snapshot.js fills in when they scroll near, when a line in them is needed, and all
at once before the browser's find (Ctrl/Cmd+F) or printing. Every line is in the document either
way: nothing is fetched later.
"""

from __future__ import annotations

from dataclasses import dataclass

BEFORE = 15  # lines laid out above the first mapped line (the pane shows it 3 lines down)
AFTER = 75  # and from it down: a tall pane's worth
BLOCK = 60  # lines per deferred block: what one scroll step fills in
WHOLE = BEFORE + AFTER + BLOCK  # a file this short is laid out whole


@dataclass(frozen=True)
class Block:
    start: int  # first line number, 1-based
    end: int  # one past the last
    live: bool  # laid out with the page (else a template filled in on demand)


def source_blocks(line_count: int, first: int, whole: bool = False) -> list[Block]:
    """Blocks covering lines 1..line_count in order: one live window around `first`, deferred
    blocks of at most BLOCK lines before and after it. `whole` (``?all=1``, or a short file) lays
    out every line."""
    if whole or line_count <= WHOLE:
        return [Block(1, line_count + 1, True)] if line_count else []
    low = max(1, min(first, line_count) - BEFORE)
    high = min(line_count + 1, low + BEFORE + AFTER)
    blocks = [Block(start, min(start + BLOCK, low), False) for start in range(1, low, BLOCK)]
    blocks.append(Block(low, high, True))
    blocks.extend(Block(start, min(start + BLOCK, line_count + 1), False)
                  for start in range(high, line_count + 1, BLOCK))
    return blocks
