"""The log scan's helper process (app/ingest/log_prescan.py): the same records as a scan in this process,
whether the helper runs, cannot start, exits at once or dies half-way through a file; the ingest's
rows are the same with it and without it; and the file is read to its end either way. Logs are
real captures (tests/fixtures), some cut or mixed with junk as real logs are."""

from __future__ import annotations

import hashlib
import io
import lzma
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from app.ingest import log_prescan
from app.ingest.log_prescan import LogPrescan
from app.insight.op_terms import blob_terms
from app.store.db import Database
from app.store.models import Banner, Compilation, CompilationTerm, OpTerm, Problem, Snapshot
from parsers.logs.log import scan_log
from parsers.records import Dump
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

# A helper that stops after sending its first ~300 KB, as if killed: the ingest must finish the file.
_DIES_HALF_WAY = """
import os, sys
from app.ingest import log_prescan
class Dying:
    def __init__(self, out): self.out, self.sent = out, 0
    def write(self, data):
        self.out.write(data); self.sent += len(data)
        if self.sent > 300_000: self.out.flush(); os._exit(1)
    def flush(self): self.out.flush()
terms = sys.argv[1] == "--terms"
for file, path in enumerate(sys.argv[2:] if terms else sys.argv[1:]):
    log_prescan._scan_file(file, path, Dying(sys.stdout.buffer), terms)
"""


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """A 6.7 MB Triton 3.8 capture as it is, cut inside a dump, and with binary junk written into it."""
    folder = tmp_path_factory.mktemp("logs")
    data = lzma.decompress((FIXTURES / "triton38_fidelity.log.xz").read_bytes())
    junk = bytes(range(256)) * 64
    made = {
        "whole": data,
        "cut": data[: len(data) * 2 // 3],
        "junk": data[: len(data) // 3] + junk + data[len(data) // 3 :],
    }
    paths = {}
    for name, content in made.items():
        paths[name] = folder / f"{name}.log"
        paths[name].write_bytes(content)
    return paths


def local(path: Path) -> list[tuple]:
    with open(path, "rb") as stream:
        return [(record, None, None) for record in scan_log(stream)]


def prescanned(path: Path, command: list[str] | None = None) -> tuple[list, LogPrescan | None, io.BytesIO]:
    prescan = LogPrescan.start([str(path)], command=command, min_bytes=0)
    stream = io.BytesIO(path.read_bytes())
    if prescan is None:
        return [], None, stream
    try:
        records = prescan.records(str(path), stream)
        assert records is not None
        return list(records), prescan, stream
    finally:
        prescan.close()


def assert_same_records(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for (record, digest, terms), (want, _, _) in zip(got, expected):
        assert record == want
        if type(record) is Dump:
            assert digest in (None, hashlib.sha256(record.body).hexdigest())
            assert terms is None or terms == blob_terms(record.body)


@pytest.mark.parametrize("name", ["whole", "cut", "junk"])
def test_the_helper_gives_the_records_of_a_scan_here(logs, name):
    expected = local(logs[name])
    got, prescan, stream = prescanned(logs[name])
    assert_same_records(got, expected)
    assert prescan.files_scanned == 1  # the helper's records, not the fallback's
    dumps = [(record, digest, terms) for record, digest, terms in got if type(record) is Dump]
    assert all(digest is not None for _, digest, _ in dumps)
    # A 4-7 MB log: the helper finds the op-index terms of each whole dump too.
    assert all((terms is None) == bool(record.damage) for record, _, terms in dumps)
    assert stream.tell() == len(stream.getvalue())  # read to the end: byte counts and limits apply
    if name != "whole":
        assert any(type(record) is Dump and record.damage for record, _, _ in got)


def test_an_unchanged_body_is_the_same_object_as_in_a_scan_here(logs):
    """Grouping and hashing recognise an unchanged pass by identity: the helper keeps it."""
    expected = local(logs["whole"])
    got, _, _ = prescanned(logs["whole"])
    dumps = [record for record, _, _ in got if type(record) is Dump]
    wanted = [record for record, _, _ in expected if type(record) is Dump]
    shared = [i for i in range(1, len(wanted)) if wanted[i].body is wanted[i - 1].body]
    assert len(shared) > 50
    assert all(dumps[i].body is dumps[i - 1].body for i in shared)


@pytest.mark.parametrize(
    "command",
    [["/nonexistent/irlens-python"], [sys.executable, "-c", "pass"], [sys.executable, "-c", _DIES_HALF_WAY]],
    ids=["cannot-start", "exits-at-once", "dies-half-way"],
)
def test_without_the_helper_nothing_is_lost(logs, command, monkeypatch):
    resumed = []

    def scan_here(path, stream, reader, skip):
        resumed.append(skip)
        return original(path, stream, reader, skip)

    original = log_prescan._scan_here
    monkeypatch.setattr(log_prescan, "_scan_here", scan_here)
    expected = local(logs["junk"])
    got, prescan, stream = prescanned(logs["junk"], command)
    if prescan is None:  # it could not start: the ingest scans as usual
        assert command[0].startswith("/nonexistent")
        return
    assert_same_records(got, expected)
    assert prescan.files_scanned == 0
    assert stream.tell() == len(stream.getvalue())
    if "os._exit" in command[-1]:  # it sent records first: the ingest goes on from the next one
        assert len(resumed) == 1 and 0 < resumed[0] < len(expected)
    else:
        assert resumed == [0]


def test_a_file_the_helper_was_not_given_is_scanned_here(logs, tmp_path):
    prescan = LogPrescan.start([str(logs["whole"])], min_bytes=0)
    try:
        assert prescan.records(str(logs["cut"]), io.BytesIO()) is None
        assert prescan.records(None, io.BytesIO()) is None
    finally:
        prescan.close()


def test_small_or_compressed_inputs_start_no_helper(logs):
    compressed = str(FIXTURES / "sm90_add_kernel_dump.log.gz")  # the ingest's walk decompresses it
    assert LogPrescan.start([compressed], min_bytes=0) is None
    assert LogPrescan.start([str(logs["whole"])], min_bytes=1 << 40) is None
    assert LogPrescan.start([str(logs["whole"].parent / "missing.log")], min_bytes=0) is None


def rows(database: Database, run_id: str) -> dict[str, list]:
    with database.session() as session:
        compilations = [tuple(row) for row in session.execute(
            select(Compilation.ordinal, Compilation.kernel, Compilation.status, Compilation.status_reason,
                   Compilation.target, Compilation.changed).where(Compilation.run_id == run_id)
            .order_by(Compilation.ordinal)
        )]
        snapshots = [tuple(row) for row in session.execute(
            select(Compilation.ordinal, Snapshot.index, Banner.text, Snapshot.blob, Snapshot.line,
                   Snapshot.line_count, Snapshot.changed, Snapshot.base_index)
            .join(Compilation, Compilation.pk == Snapshot.compilation_pk).join(Snapshot.banner)
            .where(Compilation.run_id == run_id).order_by(Compilation.ordinal, Snapshot.index)
        )]
        problems = sorted(tuple(row) for row in session.execute(
            select(Problem.kind, Problem.message, Problem.line, Problem.blob).where(Problem.run_id == run_id)
        ))
        terms = sorted(tuple(row) for row in session.execute(
            select(Compilation.ordinal, OpTerm.name, CompilationTerm.first_index, CompilationTerm.last_index)
            .join(CompilationTerm, CompilationTerm.compilation_pk == Compilation.pk)
            .join(OpTerm, OpTerm.id == CompilationTerm.term_id).where(Compilation.run_id == run_id)
        ))
    return {"compilations": compilations, "snapshots": snapshots, "problems": problems, "terms": terms}


def test_over_the_terms_floor_the_ingest_finds_the_terms_itself(logs, monkeypatch):
    monkeypatch.setattr(log_prescan, "TERMS_BYTES", 1 << 20)
    got, prescan, _ = prescanned(logs["whole"])
    assert prescan.files_scanned == 1
    assert all(terms is None for _, _, terms in got)


@pytest.mark.parametrize("workers", [1, 3], ids=["one-helper", "three-helpers"])
@pytest.mark.parametrize("terms_bytes", [log_prescan.TERMS_BYTES, 0], ids=["helper-terms", "own-terms"])
def test_an_ingest_stores_the_same_with_and_without_the_helper(logs, tmp_path, monkeypatch, terms_bytes, workers):
    monkeypatch.setattr(log_prescan, "TERMS_BYTES", terms_bytes)
    monkeypatch.setattr(log_prescan, "RANGE_BYTES", 300_000)  # three helpers take ranges in turn
    monkeypatch.setenv("IRLENS_SCAN_WORKERS", str(workers))
    paths = [str(logs["junk"]), str(logs["cut"])]
    results = {}
    for name in ("helper", "here"):
        (tmp_path / name).mkdir()
        database = Database(fresh_db_url(tmp_path / name))
        prescan = LogPrescan.start(paths, min_bytes=0) if name == "helper" else None
        try:
            run = ingest_paths(database, paths, prescan=prescan)
            results[name] = (rows(database, run["run"]), run["damaged"], [w["message"] for w in run["warnings"]])
        finally:
            database.dispose()
        if prescan is not None:
            assert prescan.files_scanned == 2
            assert prescan.process is None  # the ingest stopped it
            assert prescan._frames.count == workers
    assert results["helper"][0]["snapshots"] and results["helper"][0]["terms"]
    assert results["helper"] == results["here"]


def test_an_upload_to_the_server_is_scanned_by_the_helper(logs, tmp_path, monkeypatch):
    """A large plain log uploaded to the server: its temp file is read by the helper through /proc,
    which finds its terms too; the run's rows equal those of the same upload scanned in process."""
    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app
    from app.web.views import runs as runs_view
    from tests.conftest import form_token

    started: list[LogPrescan | None] = []
    start = LogPrescan.start

    def recording(paths, **options):
        started.append(start(paths, **options) if use_helper else None)
        return started[-1]

    monkeypatch.setattr(runs_view.LogPrescan, "start", recording)
    results = {}
    for use_helper in (True, False):
        folder = tmp_path / ("helper" if use_helper else "here")
        folder.mkdir()
        app = create_app(Settings(db_url=fresh_db_url(folder), data_dir=folder, load_demo=False))
        with TestClient(app) as client:
            files = [("file", (logs[name].name, logs[name].read_bytes(), "text/plain")) for name in ("junk", "cut")]
            response = client.post("/runs", files=files, data={"csrf_token": form_token(client)})
            assert response.status_code == 201, response.text
            run = response.json()
            results[use_helper] = (rows(app.state.db, run["run"]), run["damaged"], [w["message"] for w in run["warnings"]])
    helper = started[0]
    assert helper is not None and helper.files_scanned == 2 and helper.process is None
    assert results[True][0]["terms"] and results[True] == results[False]
