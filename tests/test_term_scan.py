"""The op index's helper process (app/insight/op_term_scan.py): the same term sets as a scan in this process,
whether the helper runs, cannot start, or dies half-way; and an ingest's index rows are the same
with it and without it. Texts come from corpus logs."""

from __future__ import annotations

import sys
import tarfile
import time

import pytest
from sqlalchemy import select

from app.ingest import pipeline as ingest_module
from app.insight.op_term_scan import TermScanner
from app.insight.op_terms import blob_terms
from app.store.db import Database
from app.store.models import Compilation, CompilationTerm, OpTerm
from parsers.logs.log import scan_log
from parsers.records import Dump
from tests.conftest import corpus_archive, fresh_db_url, ingest_paths

SMALL_BATCH = 64 << 10  # many batches from one corpus log


@pytest.fixture(scope="module")
def texts() -> dict[str, bytes]:
    """The distinct dump bodies of one corpus log, by sha256."""
    import hashlib

    found: dict[str, bytes] = {}
    with tarfile.open(corpus_archive("gfx942_mix")) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".log"):
                for record in scan_log(tar.extractfile(member)):
                    if type(record) is Dump:
                        found.setdefault(hashlib.sha256(record.body).hexdigest(), record.body)
    assert sum(map(len, found.values())) > 8 * SMALL_BATCH
    return found


def scan(scanner: TermScanner, texts: dict[str, bytes]) -> dict[str, frozenset[str]]:
    for digest, body in texts.items():
        scanner.add(digest, body)
    return scanner.finish()


def test_the_helper_finds_what_a_scan_here_finds(texts):
    scanner = TermScanner(batch_bytes=SMALL_BATCH)
    assert scan(scanner, texts) == {digest: blob_terms(body) for digest, body in texts.items()}
    assert scanner.helper_batches > 1  # the helper answered, not the fallback


def test_without_a_helper_every_text_is_scanned_here(texts):
    scanner = TermScanner(command=["/nonexistent/irlens-python"], batch_bytes=SMALL_BATCH)
    assert scan(scanner, texts) == {digest: blob_terms(body) for digest, body in texts.items()}
    assert scanner.helper_batches == 0


def test_a_helper_that_exits_at_once_loses_nothing(texts):
    scanner = TermScanner(command=[sys.executable, "-c", "pass"], batch_bytes=SMALL_BATCH)
    assert scan(scanner, texts) == {digest: blob_terms(body) for digest, body in texts.items()}
    assert scanner.helper_batches == 0


def test_a_helper_killed_half_way_loses_nothing(texts):
    scanner = TermScanner(batch_bytes=SMALL_BATCH)
    items = list(texts.items())
    half = len(items) // 2
    for digest, body in items[:half]:
        scanner.add(digest, body)
    deadline = time.monotonic() + 60
    while not scanner.helper_batches and time.monotonic() < deadline:
        time.sleep(0.01)
    assert scanner.helper_batches
    scanner._process.kill()  # as the OOM killer would
    for digest, body in items[half:]:
        scanner.add(digest, body)
    assert scanner.finish() == {digest: blob_terms(body) for digest, body in items}


def test_close_stops_the_helper(texts):
    scanner = TermScanner(batch_bytes=SMALL_BATCH)
    for digest, body in texts.items():
        scanner.add(digest, body)
    process = scanner._process
    assert process is not None
    scanner.close()
    assert process.poll() is not None
    assert not [thread for thread in scanner._threads if thread.is_alive()]


def index_rows(database: Database, run_id: str) -> set[tuple]:
    with database.session() as session:
        return {tuple(row) for row in session.execute(
            select(Compilation.ordinal, OpTerm.name, CompilationTerm.first_index, CompilationTerm.last_index)
            .join(CompilationTerm, CompilationTerm.compilation_pk == Compilation.pk)
            .join(OpTerm, OpTerm.id == CompilationTerm.term_id)
            .where(Compilation.run_id == run_id)
        )}


def test_an_ingest_indexes_the_same_with_and_without_the_helper(tmp_path, monkeypatch):
    archive = corpus_archive("gpu_autotune")
    made: list[TermScanner] = []

    def scanner(command):
        made.append(TermScanner(command=command, batch_bytes=SMALL_BATCH))
        return made[-1]

    results = {}
    for name, command in (("helper", None), ("here", ["/nonexistent/irlens-python"])):
        monkeypatch.setattr(ingest_module, "TermScanner", lambda command=command: scanner(command))
        (tmp_path / name).mkdir()
        database = Database(fresh_db_url(tmp_path / name))
        try:
            run = ingest_paths(database, [archive])
            results[name] = index_rows(database, run["run"])
        finally:
            database.dispose()
    assert made[0].helper_batches > 1 and made[1].helper_batches == 0
    assert results["helper"] and results["helper"] == results["here"]
