"""Stored adjacent diffs (app/insight/adjacent_diffs.py): what the background stores is exactly what the diff
page would compute, the page is the same with and without the rows, and rows of other diff code or of
deleted texts do not linger. On the real add_kernel capture (78 dumps); its pairs are small, so the
size threshold is lowered to store them all."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select, update

from app import diff
from app.insight import adjacent_diffs, precompute
from app.render import blob_reader
from app.settings import Settings
from app.store.db import Database
from app.store.models import AdjacentDiff, Compilation, Snapshot
from app.store.retention import delete_run
from app.urls import snapshot_id
from app.web.app import create_app
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

FIXTURE = FIXTURES / "sm90_add_kernel_dump.log.gz"


@pytest.fixture
def stored_everything(monkeypatch):
    monkeypatch.setattr(adjacent_diffs, "MIN_LINES", 0)


def _rows(database: Database) -> list[AdjacentDiff]:
    with database.session() as session:
        rows = list(session.scalars(select(AdjacentDiff)))
        session.expunge_all()
        return rows


def test_stored_segments_are_the_computed_diff(tmp_path, stored_everything):
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [FIXTURE])
        assert precompute.pending_runs(database) == [run["run"]]
        assert precompute.prepare_pending(database) == 1
        assert precompute.pending_runs(database) == []
        rows = _rows(database)
        with database.session() as session:
            assert len(rows) == len(adjacent_diffs.run_pairs(session, run["run"])) >= 12
            changed = 0
            for row in rows:
                a_text = blob_reader.text(session, row.a_blob)
                b_text = blob_reader.text(session, row.b_blob)
                stored = adjacent_diffs.stored_result(session, row.a_blob, row.b_blob, a_text, b_text)
                computed = diff.diff_texts(a_text, b_text)
                assert stored is not None and row.version == adjacent_diffs.VERSION
                assert stored.segments == computed.segments
                assert (stored.a_lines, stored.b_lines) == (computed.a_lines, computed.b_lines)
                assert stored.hunks() == computed.hunks() and stored.stats == computed.stats
                changed += not computed.identical
            assert changed >= 12
            # a second preparation stores nothing new
            assert adjacent_diffs.store_run(session, run["run"]) == 0
    finally:
        database.dispose()


def test_pack_round_trip_and_refusals():
    a_text = (FIXTURES / "iree_simple_mul.mlir").read_text()
    b_text = a_text.replace("mul", "add", 1) + "\n// one more line\n"
    result = diff.diff_texts(a_text, b_text)
    a_lines, b_lines = len(result.a_lines), len(result.b_lines)
    packed = adjacent_diffs.pack(result.segments)
    assert adjacent_diffs.unpack(packed, a_lines, b_lines) == result.segments
    assert adjacent_diffs.unpack(packed, a_lines + 1, b_lines) is None  # not these texts
    assert adjacent_diffs.unpack(b"not zlib", a_lines, b_lines) is None
    assert adjacent_diffs.unpack(adjacent_diffs.pack([]), 0, 0) == []


def test_the_page_is_the_same_with_and_without_stored_rows(tmp_path, stored_everything, monkeypatch):
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [FIXTURE])
        precompute.prepare_run(database, run["run"])
        assert _rows(database)
        with database.session() as session:
            blobs = list(session.scalars(select(Snapshot.blob).join(Compilation).where(
                Compilation.run_id == run["run"], Compilation.ordinal == 1).order_by(Snapshot.index)))
    finally:
        database.dispose()
    changed = [index for index in range(len(blobs) - 1) if blobs[index] != blobs[index + 1]]
    pages = [f"/diff/{snapshot_id(run['run'], 1, index)}..{snapshot_id(run['run'], 1, index + 1)}"
             for index in changed[:: max(len(changed) // 4, 1)]]
    assert len(pages) >= 4

    def visit() -> list[str]:
        with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
            bodies = []
            for page in pages:
                for suffix in ("", ".json"):
                    response = client.get(page + suffix)
                    assert response.status_code == 200
                    bodies.append(response.text)
            return bodies

    from app.web.views import diffs

    computed = []

    def counting(*args):
        computed.append(args)
        return diff.diff_texts(*args)

    monkeypatch.setattr(diffs, "diff_texts", counting)
    diffs.diff_cache._entries.clear()
    with_rows = visit()
    assert computed == []  # every page read its stored diff
    database = Database(url)
    try:
        with database.session() as session:
            session.execute(delete(AdjacentDiff))
            session.commit()
    finally:
        database.dispose()
    diffs.diff_cache._entries.clear()
    assert visit() == with_rows
    assert len(computed) == len(pages)  # computed on the first visit, as without this module


def test_rows_of_other_diff_code_are_ignored_then_replaced(tmp_path, stored_everything):
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [FIXTURE])
        precompute.prepare_run(database, run["run"])
        stored = len(_rows(database))
        with database.session() as session:
            session.execute(update(AdjacentDiff).values(version="older"))
            session.commit()
            row = session.scalars(select(AdjacentDiff)).first()
            a_text, b_text = blob_reader.text(session, row.a_blob), blob_reader.text(session, row.b_blob)
            assert adjacent_diffs.stored_result(session, row.a_blob, row.b_blob, a_text, b_text) is None
            assert adjacent_diffs.store_run(session, run["run"]) == stored
        assert {row.version for row in _rows(database)} == {adjacent_diffs.VERSION}
    finally:
        database.dispose()


def test_deleting_the_run_deletes_its_stored_diffs(tmp_path, stored_everything):
    database = Database(fresh_db_url(tmp_path))
    try:
        first = ingest_paths(database, [FIXTURE])
        second = ingest_paths(database, [FIXTURE])  # the same texts: the rows are shared
        precompute.prepare_pending(database)
        stored = len(_rows(database))
        assert stored
        delete_run(database, first["run"])
        assert len(_rows(database)) == stored  # the other run still uses every text
        delete_run(database, second["run"])
        with database.session() as session:
            assert session.scalar(select(func.count()).select_from(AdjacentDiff)) == 0
    finally:
        database.dispose()
