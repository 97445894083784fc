"""Which lines of a Python source pane the snapshot page lays out at once (app/web/source_window.py)."""

from __future__ import annotations

import itertools

from app.web.source_window import AFTER, BEFORE, BLOCK, WHOLE, source_blocks


def test_source_blocks_cover_every_line_once_around_the_first_mapped_one():
    assert source_blocks(0, 1) == []
    assert [(b.start, b.end, b.live) for b in source_blocks(WHOLE, 7)] == [(1, WHOLE + 1, True)]
    assert [(b.start, b.end, b.live) for b in source_blocks(5000, 300, whole=True)] == [(1, 5001, True)]
    for count in (WHOLE + 1, 253, 1000, 5000):
        for first in (1, 2, BEFORE, BEFORE + 1, 104, count // 2, count - 1, count, count + 40):
            blocks = source_blocks(count, first)
            assert blocks[0].start == 1 and blocks[-1].end == count + 1
            assert all(a.end == b.start for a, b in itertools.pairwise(blocks))
            live = [b for b in blocks if b.live]
            assert len(live) == 1 and live[0].end - live[0].start <= BEFORE + AFTER
            assert live[0].start <= min(first, count) < live[0].end
            assert all(0 < b.end - b.start <= BLOCK for b in blocks if not b.live)
