"""A big log scanned by several helpers over byte ranges (app/ingest/log_ranges.py,
app/ingest/log_prescan.py) gives exactly the records of one scan in this process: the same dumps,
damage, line numbers and gap blocks, on real logs as they are, cut short, with junk written into them,
with CRLF line ends, with lines interleaved, and on several files in one ingest. Ranges are made small
here (a few dozen KB) so that every log is cut many times."""

from __future__ import annotations

import io
import itertools
import lzma
import random
from pathlib import Path

import pytest

from app.ingest.log_prescan import LogPrescan
from app.ingest.log_ranges import plan
from parsers.logs.log import scan_log
from parsers.records import Dump
from tests import fuzz_support as fz
from tests.conftest import FIXTURES


def _variants() -> dict[str, bytes]:
    fidelity = lzma.decompress((FIXTURES / "triton38_fidelity.log.xz").read_bytes())
    made = {"fidelity": fidelity, "fidelity-cut": fidelity[: len(fidelity) * 2 // 3],
            "fidelity-junk": fidelity[: len(fidelity) // 3] + bytes(range(256)) * 64 + fidelity[len(fidelity) // 3 :]}
    rng = random.Random(29)
    for name in fz.LOG_FIXTURES:
        data = fz.fixture_log(name)
        lines = fz.split_lines(data)
        half = len(lines) // 2
        made[name] = data
        made[name + "-crlf"] = data.replace(b"\n", b"\r\n")
        made[name + "-mixed"] = b"".join([line for pair in zip(lines[:half], lines[half:]) for line in pair])
        edits = bytearray(data)
        for _ in range(6):
            at = rng.randrange(len(edits))
            edits[at:at] = rng.choice(fz.INTERESTING)
        made[name + "-edited"] = bytes(edits)
    return made


VARIANTS = _variants()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ranges")
    paths = {}
    for name, data in VARIANTS.items():
        paths[name] = folder / f"{name}.log"
        paths[name].write_bytes(data)
    return paths


def local(path: Path) -> list:
    with open(path, "rb") as stream:
        return list(scan_log(stream))


def ranged(paths: list[Path], workers: int, range_bytes: int) -> tuple[list[list], LogPrescan]:
    prescan = LogPrescan.start([str(path) for path in paths], min_bytes=0, workers=workers, range_bytes=range_bytes)
    total = sum(path.stat().st_size for path in paths)
    assert prescan is not None and len(prescan.processes) == min(workers, -(-total // range_bytes))
    try:
        out = []
        for path in paths:
            stream = io.BytesIO(path.read_bytes())
            out.append([record for record, _, _ in prescan.records(str(path), stream)])
            assert stream.tell() == len(stream.getvalue())  # read to its end: byte counts and limits apply
        return out, prescan
    finally:
        prescan.close()


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("workers,range_bytes", [(2, 40_000), (3, 97_000)])
def test_ranges_give_the_records_of_one_scan(files, name, workers, range_bytes):
    path = files[name]
    expected = local(path)
    cuts = len(plan(str(path), range_bytes))
    (got,), prescan = ranged([path], workers, range_bytes)
    assert got == expected
    assert prescan.files_scanned == 1  # the helpers' records, not a scan here
    if name.startswith("fidelity"):
        assert cuts > 10  # a 4-7 MB log cut in many places: the test compares something


def test_several_files_in_one_ingest(files):
    names = ["fidelity", "sm90_add_kernel_dump.log.gz", "fidelity-junk"]
    paths = [files[name] for name in names]
    got, prescan = ranged(paths, 2, 50_000)
    assert got == [local(path) for path in paths]
    assert prescan.files_scanned == 3
    dumps = [record for record in got[0] if type(record) is Dump]
    assert dumps and all(type(dump.line) is int for dump in dumps)


def test_plan_cuts_at_banners_after_a_blank_line(files):
    data = VARIANTS["fidelity"]
    ranges = plan(str(files["fidelity"]), 100_000)
    assert len(ranges) > 10 and ranges[0][0] == 0 and ranges[-1][1] is None
    for (_, end), (start, _) in itertools.pairwise(ranges):
        assert end == start and data[start - 2 : start] == b"\n\n" and data.startswith(b"// -----// IR Dump ", start)


def test_a_helper_that_dies_loses_nothing(files):
    """One of the helpers killed at once: the ingest takes the ranges before its first one from the
    others, then scans the rest of the file itself."""
    path = files["fidelity"]
    prescan = LogPrescan.start([str(path)], min_bytes=0, workers=2, range_bytes=200_000)
    assert prescan is not None and len(prescan.processes) == 2
    prescan.processes[1].kill()
    try:
        got = [record for record, _, _ in prescan.records(str(path), io.BytesIO(path.read_bytes()))]
    finally:
        prescan.close()
    assert got == local(path)
    assert prescan.files_scanned == 0  # the helpers' records stopped: the rest was scanned here
