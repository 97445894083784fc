"""The log scanner on real dumps, whole, cut off, and interleaved as concurrent compiles leave them."""

from __future__ import annotations

import gzip
import io
import re

import pytest

from parsers.logs.log import scan_log
from parsers.records import Dump, GapBlock
from tests.conftest import FIXTURES

LOG = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())
BANNERS = [m.start() for m in re.finditer(rb"^// -----// ", LOG, re.MULTILINE)]


def scan(data: bytes, chunk_size: int = 1 << 20) -> list:
    return list(scan_log(io.BytesIO(data), chunk_size=chunk_size))


def dumps(records: list) -> list[Dump]:
    return [r for r in records if isinstance(r, Dump)]


@pytest.mark.parametrize("chunk_size", [1 << 20, 4096, 97])
def test_whole_log_keeps_every_dump_byte_for_byte(chunk_size):
    found = dumps(scan(LOG, chunk_size))
    assert [d.header.kind for d in found].count("mlir") == 76
    assert [d.header.kind for d in found].count("internal") == 2
    assert not any(d.damage for d in found)
    # Round trip: banner + body + blank line reproduces each dump as logged.
    for dump, start, end in zip(found, BANNERS, BANNERS[1:] + [len(LOG)]):
        original = LOG[start:end]
        banner, _, body = original.partition(b"\n")
        assert banner.decode() == dump.header.raw
        assert body.rstrip(b"\n") == dump.body


def test_line_numbers_point_at_banners():
    found = dumps(scan(LOG, 4096))
    for dump, start in zip(found, BANNERS):
        assert LOG.count(b"\n", 0, start) + 1 == dump.line


def test_log_cut_off_mid_dump_keeps_complete_dumps():
    cut = BANNERS[40] + (BANNERS[41] - BANNERS[40]) // 2
    found = dumps(scan(LOG[:cut], 4096))
    assert len(found) == 41
    assert not any(d.damage for d in found[:40])
    assert found[40].damage and found[40].truncated


def test_dump_cut_off_by_another_dumps_banner_is_damaged():
    # Thread B's dump starts while thread A's is half written: A is damaged, B is intact.
    a_start, a_end = BANNERS[10], BANNERS[11]
    b_start, b_end = BANNERS[30], BANNERS[31]
    half = LOG.index(b"\n", a_start + (a_end - a_start) // 2) + 1
    mixed = LOG[:half] + LOG[b_start:b_end] + LOG[a_end:]
    found = dumps(scan(mixed, 4096))
    damaged = [d for d in found if d.damage]
    assert len(damaged) == 1 and damaged[0].line == LOG.count(b"\n", 0, a_start) + 1
    assert len(found) == len(BANNERS) + 1  # all 78, the damaged one, and the interloper
    interloper = found[found.index(damaged[0]) + 1]
    assert interloper.body == LOG[b_start:b_end].partition(b"\n")[2].rstrip(b"\n") and not interloper.damage


def test_two_banners_on_one_line_are_flagged_and_the_rest_kept():
    # Character-level interleaving: the second banner is glued onto the first one's line.
    a, b = BANNERS[5], BANNERS[6]
    banner_end = LOG.index(b"\n", a)
    glued = LOG[:banner_end] + LOG[b : LOG.index(b"\n", b)] + LOG[banner_end:]
    found = dumps(scan(glued, 4096))
    assert sum(1 for d in found if d.damage) >= 1
    intact = [d for d in found if not d.damage]
    assert len(intact) >= len(BANNERS) - 2


def test_non_utf8_and_junk_lines_stay_in_the_gap_text():
    junk = b"warning: \xff\xfe not utf-8\n\x00\x01binary junk\n"
    found = scan(junk + LOG[: BANNERS[3]] + junk)
    gap_lines = [text for r in found if isinstance(r, GapBlock) for _, text in r.lines]
    assert any("\ufffd" in line for line in gap_lines)
    assert any("binary junk" in line for line in gap_lines)
    assert len(dumps(found)) == 3


def test_empty_input_gives_nothing():
    assert scan(b"") == []
