"""Hostile and broken inputs through the real Ingest into a real database: every bad input gets a
message the user sees in the run's JSON, every intact part is kept, nothing raises.

Logs are real (tests/fixtures, cut from the corpus); cache folders come from the corpus's sm90_mix
capture (those tests skip without ../shared). The parsers' properties under random mutation are in
tests/test_fuzz_logs.py; this file is the named matrix, end to end.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import shutil
import struct
import tarfile
import tracemalloc
from pathlib import Path

import pytest
from sqlalchemy import select

from app.store.blobs import BlobReader
from app.store.models import InputRecord, Problem
from parsers.logs import log as log_scanner
from parsers.logs.log import MAX_LINE_BYTES, scan_log
from parsers.records import Dump, GapBlock
from tests.conftest import FIXTURES, corpus_archive, ingest_paths

LOG = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())  # add_kernel: 76 + 2 dumps
OLD = gzip.decompress((FIXTURES / "old_header_sm90_triton31.log.gz").read_bytes())  # 14 dumps, Triton 3.1
BANNERS = [m.start() for m in re.finditer(rb"^// -----// ", LOG, re.MULTILINE)]
ADD_CACHE = "ILTIJA2Q5YPPWM3F6Z4AQFBIRFB5PUVD2LWJPYPGVZJ57B75YLEQ"  # sm90_mix's add_kernel cache entry


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def warnings(run) -> list[tuple[str | None, str]]:
    return [(w["path"], w["message"]) for w in run["warnings"]]


def snapshots(compilation) -> int:
    return sum(compilation["snapshots"].values())


@pytest.fixture(scope="module")
def add_cache(tmp_path_factory):
    """sm90_mix's add_kernel cache folder (the kernel of LOG), unpacked once."""
    archive = corpus_archive("sm90_mix")
    root = tmp_path_factory.mktemp("cache")
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if f"/cache/{ADD_CACHE}/" in m.name]
        tar.extractall(root, members=members, filter="data")
    (folder,) = root.glob(f"*/cache/{ADD_CACHE}")
    return folder


def cache_copy(add_cache, tmp_path, where: str = "cache"):
    target = tmp_path / where / ADD_CACHE
    shutil.copytree(add_cache, target)
    return target


# -- logs -------------------------------------------------------------------------------------------


def test_logs_cut_at_random_offsets_keep_every_whole_dump(db, tmp_path):
    rng = random.Random(7)  # fixed: the cut points below are part of the test
    cuts = sorted(rng.randrange(BANNERS[1], len(LOG)) for _ in range(4))
    paths = [write(tmp_path, f"cut{i}.log", LOG[:cut]) for i, cut in enumerate(cuts)]
    run = ingest_paths(db, paths)
    by_log = {c["log"]: c for c in run["compilations"]}
    for i, cut in enumerate(cuts):
        # Whole dumps are those whose blank line is in the file; the one the cut falls in is damaged.
        whole = sum(1 for start in BANNERS if LOG.find(b"\n\n", start) + 1 <= cut)
        assert snapshots(by_log[f"cut{i}.log"]) == whole
        if whole < len(BANNERS):
            assert by_log[f"cut{i}.log"]["status"] == "partial"
            assert (f"cut{i}.log", "the log ends inside this dump") in warnings(run)


def test_two_logs_interleaved_by_lines_and_by_characters_are_kept_with_their_damage(db, tmp_path):
    lines_a, lines_b = LOG.splitlines(keepends=True), OLD.splitlines(keepends=True)
    rng = random.Random(3)
    by_line, i, j = [], 0, 0
    while i < len(lines_a) or j < len(lines_b):  # runs of 1..40 lines from each, as threads write
        take = rng.randint(1, 40)
        by_line += lines_a[i : i + take]
        i += take
        take = rng.randint(1, 40)
        by_line += lines_b[j : j + take]
        j += take
    by_char, i, j = [], 0, 0
    while i < len(LOG) or j < len(OLD):  # runs of 1..300 characters: lines cut in half
        take = rng.randint(1, 300)
        by_char.append(LOG[i : i + take])
        i += take
        take = rng.randint(1, 300)
        by_char.append(OLD[j : j + take])
        j += take
    run = ingest_paths(db, [write(tmp_path, "lines.log", b"".join(by_line)),
                            write(tmp_path, "chars.log", b"".join(by_char))])
    assert run["damaged"] > 0
    assert sum(snapshots(c) for c in run["compilations"]) + run["damaged"] <= 2 * (78 + 14)
    with db.session() as session:
        damaged = session.scalars(select(Problem).where(Problem.kind == "damaged-dump")).all()
        assert len(damaged) == run["damaged"]
        reader = BlobReader()
        for problem in damaged:  # each damaged dump says why and keeps its text
            assert problem.message and problem.header and problem.line
            assert reader.get(session, problem.blob) in b"".join(by_line) + b"".join(by_char)
        kept = dict(session.execute(select(InputRecord.path, InputRecord.role)).all())
    assert kept == {"lines.log": "log", "chars.log": "log"}


def test_split_and_doubled_banners_are_reported_and_the_other_dumps_kept(db, tmp_path):
    banner_end = LOG.index(b"\n", BANNERS[5])
    split = LOG[: BANNERS[5] + 4] + b"\n" + LOG[BANNERS[5] + 4 :]  # "// -" + newline + "----// IR Dump ..."
    doubled = LOG[:banner_end] + LOG[BANNERS[9] : LOG.index(b"\n", BANNERS[9])] + LOG[banner_end:]
    run = ingest_paths(db, [write(tmp_path, "split.log", split), write(tmp_path, "doubled.log", doubled)])
    by_log = {c["log"]: c for c in run["compilations"]}
    assert snapshots(by_log["split.log"]) == snapshots(by_log["doubled.log"]) == 77
    assert ("split.log", "a dump banner irlens cannot parse; kept as log text") in warnings(run)
    assert ("doubled.log", "banner interleaved with another dump's banner") in warnings(run)


def test_crlf_log_gives_the_same_compilation(db, tmp_path):
    run = ingest_paths(db, [write(tmp_path, "windows.log", LOG.replace(b"\n", b"\r\n"))])
    (compilation,) = run["compilations"]
    assert compilation["snapshots"] == {"mlir": 76, "internal": 2, "llvm": 0}
    assert run["damaged"] == 0 and run["warnings"] == []


def test_nul_bytes_and_invalid_utf8_damage_only_what_they_touch(db, tmp_path):
    inside = BANNERS[20] + 300  # inside dump 20's body
    junk = LOG[:200] + b"\x00\x00" + LOG[200:inside] + b"\xff\xfe" + LOG[inside:]
    gap = b"warning: \xc3\x28 not utf-8\n\x00\x00 nul junk\n" + LOG
    run = ingest_paths(db, [write(tmp_path, "junk.log", junk), write(tmp_path, "gap.log", gap)])
    by_log = {c["log"]: c for c in run["compilations"]}
    # A NUL in the first bytes no longer makes the whole log "binary": only dumps 0 and 20 are lost.
    assert snapshots(by_log["junk.log"]) == 76 and snapshots(by_log["gap.log"]) == 78
    foreign = "holds bytes an IR printer never writes (NUL, control or non-ASCII bytes): "
    assert [m for p, m in warnings(run) if p == "junk.log"].count(
        foreign + "binary data or other output is mixed into the dump") == 2
    assert ("gap.log", "1 log lines hold bytes that are not UTF-8 (shown as \ufffd)") in warnings(run)


def _runaway(path: Path, megabytes: int) -> Path:
    with path.open("wb") as out:  # written in chunks: the test itself stays small
        out.write(LOG)
        for _ in range(megabytes):
            out.write(b"x" * (1 << 20))
        out.write(b"\n" + LOG)
    return path


def _scan_peak(path: Path) -> tuple[list[Dump], int]:
    tracemalloc.start()
    try:
        with path.open("rb") as stream:
            found = [r for r in scan_log(stream) if isinstance(r, Dump)]
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_fifty_megabyte_line_is_scanned_in_bounded_memory_and_reported(db, tmp_path):
    found, peak = _scan_peak(_runaway(tmp_path / "runaway.log", 50))
    assert len(found) == 2 * 78 and not any(d.damage for d in found)
    # Only the line's first MAX_LINE_BYTES are held: a line twice as long costs no more memory.
    _, peak_of_double = _scan_peak(_runaway(tmp_path / "double.log", 100))
    assert peak < 8 * MAX_LINE_BYTES and peak_of_double < 8 * MAX_LINE_BYTES  # not 5x the line, as before
    run = ingest_paths(db, [tmp_path / "runaway.log"])
    assert [snapshots(c) for c in run["compilations"]] == [78, 78]
    assert warnings(run) == [
        ("runaway.log", "a line of 52.4 MB: only its first 8.4 MB kept"),
        ("runaway.log", "a log line of 8.4 million characters, not IR: kept as log text"),
    ]


def test_a_dump_past_the_size_limit_ends_there_and_the_rest_is_log_text(monkeypatch):
    monkeypatch.setattr(log_scanner, "MAX_DUMP_BYTES", 3000)
    with io.BytesIO(LOG) as stream:
        records = list(scan_log(stream, chunk_size=2048))  # small reads: dumps span many of them
    dumps = [r for r in records if isinstance(r, Dump)]
    big = [d for d in dumps if d.damage == log_scanner.TOO_BIG]
    assert big and all(len(d.body) <= 3000 + 2048 for d in dumps)
    # Nothing is lost: each cut dump's last line is followed, in the gap text, by the rest of it.
    gap = "\n".join(line for r in records if isinstance(r, GapBlock) for _, line in r.lines)
    assert "tt.return" in gap
    assert len([d for d in dumps if not d.damage]) < 78 < len(dumps) + len(big)


def test_a_log_of_warnings_only_is_kept_as_text_with_a_note(db, tmp_path):
    tail = gzip.decompress((FIXTURES / "inductor_tail_warning_h200_triton36.log.gz").read_bytes())
    warning = tail[tail.rindex(b"\n\n\n") + 3 :]  # the real Python UserWarning the run printed
    path = write(tmp_path, "warnings.log", warning * 500)
    run = ingest_paths(db, [path])
    assert run["compilations"] == [] and run["damaged"] == 0
    assert warnings(run) == []
    assert [(f["path"], f["note"]) for f in run["logs"]] == [
        ("warnings.log", "no Triton IR, diagnostics or timing report: kept as log lines")]
    with db.session() as session:
        blob = session.scalar(select(InputRecord.log_blob).where(InputRecord.path == "warnings.log"))
        assert BlobReader().get(session, blob) == warning * 500


def elf64_header() -> bytes:
    """A minimal ELF64 header as a .cubin starts (EM_CUDA = 190), then padding."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x33, 7]) + bytes(7)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, 64, 0x5a055a, 64, 56, 0, 64, 0, 0)
    return header + bytes(4096 - len(header))


def test_empty_file_cubin_and_binary_named_log_get_messages_and_the_log_is_kept(db, tmp_path):
    paths = [
        write(tmp_path, "kernel.cubin", elf64_header()),
        write(tmp_path, "stderr.log", elf64_header()),  # a binary under a log's name
        write(tmp_path, "empty.log", b""),
        write(tmp_path, "dump.log", LOG),
    ]
    run = ingest_paths(db, paths)
    assert [(c["kernel"], snapshots(c)) for c in run["compilations"] if c["origin"] == "log"] == [("add_kernel", 78)]
    assert set(warnings(run)) >= {
        ("kernel.cubin", "not a kernel binary that could be read: kept as an input only, no compilation"),
        ("stderr.log", "not a text log or a Triton file: binary data"),
        ("empty.log", "empty file"),
    }


# -- cache folders ----------------------------------------------------------------------------------


BROKEN_METADATA = {
    "cut": (lambda data: data[: len(data) // 2], "kernel metadata JSON is cut short"),
    "not-json": (lambda data: b"<html>not json</html>", "kernel metadata JSON is not valid JSON"),
    "not-object": (lambda data: b"[1, 2, 3]", "kernel metadata JSON is a list, not an object"),
    "wrong-types": (
        lambda data: json.dumps({**json.loads(data), "num_warps": "4", "name": ["add_kernel"]}).encode(),
        "metadata field 'num_warps' is str \"4\", not an integer: ignored",
    ),
    "nan": (lambda data: data.replace(b'"shared": ', b'"shared": NaN, "x": '), "metadata holds NaN"),
    "deep": (lambda data: b'{"hash": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested too deeply"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_METADATA))
def test_broken_cache_metadata_is_reported_and_the_folder_still_links(db, tmp_path, add_cache, case):
    folder = cache_copy(add_cache, tmp_path)
    mutate, message = BROKEN_METADATA[case]
    metadata = folder / "add_kernel.json"
    metadata.write_bytes(mutate(metadata.read_bytes()))
    run = ingest_paths(db, [write(tmp_path, "dump.log", LOG), tmp_path / "cache"])
    (compilation,) = run["compilations"]
    # The log's compilation still finds its cache folder by the .ttgir's hash, with every file.
    assert compilation["cache"] == f"cache/{ADD_CACHE}" and compilation["cache_match"] == "ttgir"
    assert snapshots(compilation) == 78
    assert {"ttir", "ttgir", "llir", "ptx", "cubin", "json"} <= set(compilation["artifacts"])
    assert any(p == f"cache/{ADD_CACHE}/add_kernel.json" and message in m for p, m in warnings(run))
    if case == "wrong-types":
        assert compilation["num_warps"] is None and compilation["kernel"] == "add_kernel"


def test_cache_folders_with_missing_stages_are_kept_and_reported(db, tmp_path, add_cache):
    partial = tmp_path / "partial" / ADD_CACHE
    partial.mkdir(parents=True)
    for name in ("add_kernel.ttir", "add_kernel.json"):
        shutil.copy(add_cache / name, partial / name)
    ptx_only = tmp_path / "ptx" / "QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"
    ptx_only.mkdir(parents=True)
    shutil.copy(add_cache / "add_kernel.ptx", ptx_only / "add_kernel.ptx")
    run = ingest_paths(db, [tmp_path / "partial", tmp_path / "ptx"])
    assert sorted((c["kernel"], sorted(c["artifacts"])) for c in run["compilations"]) == [
        ("add_kernel", ["json", "ttir"]), ("add_kernel", ["ptx"]),
    ]
    incomplete = ("an incomplete cache entry: no .ttgir, .llir, binary (the compile failed, or files were left "
                  "out of the upload); the rest is kept")
    alone = "stage files without the IR or metadata of their cache folder: kept, but nothing ties them to a log's compilation"
    assert set(warnings(run)) == {(f"partial/{ADD_CACHE}", incomplete), (f"ptx/{ptx_only.name}", alone)}


def test_duplicate_cache_folders_and_files_are_reported(db, tmp_path, add_cache):
    cache_copy(add_cache, tmp_path, "first")
    cache_copy(add_cache, tmp_path, "second")  # the same kernel in two folders
    run = ingest_paths(db, [write(tmp_path, "dump.log", LOG), tmp_path / "first", tmp_path / "second",
                            tmp_path / "first"])  # and the same folder twice
    messages = warnings(run)
    assert (f"second/{ADD_CACHE}", f"the same kernel files as first/{ADD_CACHE}: a copy of the same cache entry") \
        in messages
    twice = [p for p, m in messages if m == "the same file is in the upload twice: the second copy is not kept"]
    assert sorted(twice) == sorted(f"first/{ADD_CACHE}/{f.name}" for f in add_cache.iterdir())
    # The log's compilation links the first copy; the second stays a compilation of its own.
    linked = [c for c in run["compilations"] if c["origin"] == "log"]
    assert [(c["kernel"], c["cache"]) for c in linked] == [("add_kernel", f"first/{ADD_CACHE}")]
    assert len(run["compilations"]) == 2


def test_nothing_raises_on_a_mixed_bad_upload_as_one_archive(db, tmp_path):
    # Everything above at once, inside one tar: the archive path goes through the same handlers.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in {
            "run/dump.log": LOG[: BANNERS[40] + 999].replace(b"\n", b"\r\n"),
            "run/kernel.cubin": elf64_header(),
            f"run/cache/{ADD_CACHE}/add_kernel.json": b'{"hash": "x", "num_warps": NaN',
            "run/empty.log": b"",
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    run = ingest_paths(db, [write(tmp_path, "bad.tar.gz", buffer.getvalue())])
    (compilation,) = [c for c in run["compilations"] if c["origin"] == "log"]
    assert snapshots(compilation) == 40 and compilation["status"] == "partial"
    assert set(warnings(run)) >= {
        ("bad.tar.gz/run/dump.log", "the log ends inside this dump"),
        ("bad.tar.gz/run/empty.log", "empty file"),
        ("bad.tar.gz/run/kernel.cubin",
         "not a kernel binary that could be read: kept as an input only, no compilation"),
    }
    assert any(m.startswith("kernel metadata JSON is cut short") for _, m in warnings(run))


def test_what_is_no_triton_cache_entry_makes_no_compilation(db, tmp_path, add_cache):
    """A folder of cuobjdump output beside a cache, a stray non-Triton JSON in the cache and in a
    folder of its own, and random bytes named .cubin: none is a compilation; each is named."""
    cache = cache_copy(add_cache, tmp_path)
    (cache / "settings.json").write_text('{"name": "my experiment", "values": [1, 2]}')
    stray = tmp_path / "cache" / "notes"
    stray.mkdir()
    (stray / "config.json").write_text('{"name": "sweep", "lr": 0.1}')
    dumps = tmp_path / "cuobjdump"
    dumps.mkdir()
    (dumps / f"{ADD_CACHE}_add_kernel.sass").write_text("        code for sm_90\n                Function : add_kernel\n")
    (dumps / f"{ADD_CACHE}_add_kernel.res-usage.txt").write_text(" Function add_kernel:\n  REG:16 STACK:0 SHARED:0 LOCAL:0\n")
    (tmp_path / "cache" / "junk").mkdir()
    (tmp_path / "cache" / "junk" / "kernel.cubin").write_bytes(bytes(range(256)) * 4)
    run = ingest_paths(db, [tmp_path / "cache", dumps])
    assert [(c["kernel"], c["cache"]) for c in run["compilations"]] == [("add_kernel", f"cache/{ADD_CACHE}")]
    messages = warnings(run)
    assert (f"cache/{ADD_CACHE}/settings.json",
            "a .json file that is not Triton kernel metadata (no hash, target, or name with num_warps)") in messages
    assert ("cache/notes/config.json", ("a .json file that is no kernel metadata, autotune file, profile or trace "
                                        "irlens reads: kept as a text log")) in messages
    assert ("cuobjdump", ("not a Triton cache entry (no kernel metadata, no IR): its files are kept as inputs, "
                          "unless a log's compilation claims them by name")) in messages
    assert ("cache/junk/kernel.cubin", "not a kernel binary that could be read: kept as an input only, no compilation") \
        in messages
