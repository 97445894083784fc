"""The map page's per-pass indexes (app/insight/source_map.py) give exactly the snapshot page's locations.

LLVM dumps are counted per !dbg node there, not resolved line by line; these tests hold the two
roads to the same answer on every snapshot of real captures: the corpus's sm90_llvm (MLIR dumps,
new-PM module and function-scope LLVM dumps, legacy and MIR dumps) and the add_kernel fixture.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app import render
from app.insight import precompute, source_map
from app.store.db import Database
from app.store.models import Compilation, LineIndex
from app.web.views.ir_page import text_loader
from app.web.views.snapshots import _snapshot_analysis
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths
from tests.test_snapshot_pages import get_json, make_site


def _expected(session, compilation, snapshot) -> dict[tuple[str, int], list[int]]:
    return _snapshot_analysis(session, compilation, snapshot, text_loader(session, snapshot.blob)).by_source


@pytest.mark.parametrize("stored", [True, False], ids=["prepared-after-ingest", "computed-on-first-visit"])
@pytest.mark.parametrize("capture", ["sm90_llvm", "fixture"])
def test_pass_indexes_equal_the_snapshot_pages_locations(tmp_path, capture, stored):
    """Indexes prepared once the run is stored (app/insight/precompute.py), and those the page computes for a
    run not prepared yet."""
    path = FIXTURES / "sm90_add_kernel_dump.log.gz" if capture == "fixture" else corpus_archive(capture)
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [path])
        if stored:
            precompute.prepare_run(database, run["run"])
        render.clear_caches()
        source_map.clear()
        with database.session() as session:
            assert bool(session.scalar(select(func.count()).select_from(LineIndex))) == stored
            compilations = list(session.scalars(select(Compilation)))
            assert compilations
            checked = located = 0
            for compilation in compilations:
                snapshots = list(compilation.snapshots)
                for snapshot, index in zip(snapshots, source_map.pass_indexes(session, snapshots), strict=True):
                    expected = _expected(session, compilation, snapshot)
                    files: dict[str, int] = {}
                    for (file, _), lines in expected.items():
                        files[file] = files.get(file, 0) + len(lines)
                    assert index.files == files, (snapshot.index, snapshot.pass_name)
                    for (file, line), lines in expected.items():
                        assert index.lines(file, line) == lines, (snapshot.index, file, line)
                    assert index.lines("no/such/file.py", 1) == []
                    checked += 1
                    located += bool(expected)
            assert checked >= 70 and located >= checked // 2
    finally:
        database.dispose()


def test_function_scope_llvm_dumps_are_on_the_map(tmp_path):
    """A function-scope LLVM dump prints no metadata: the map reads it against the latest module
    dump, as its snapshot page does, instead of showing no lines for it."""
    client, run = make_site(tmp_path, [corpus_archive("sm90_llvm")])
    with client:
        url = run["compilations"][0]["url"]
        rows = get_json(client, url)["snapshots"]
        plain = get_json(client, url + "/map")
        top = plain["files"][0]["file"]
        first = get_json(client, url + "/s/0")
        lines = [loc["line"] for loc in first["locs"] if loc and loc["file"] == top]
        line = max(set(lines), key=lines.count)
        mapped = get_json(client, f"{url}/map?file={top}&line={line}")
    # new-PM function passes: scope "add_kernel" (module dumps say "[module]", MIR "machine")
    function_scope = {
        row["index"] for row in rows
        if row["kind"] == "llvm" and row["scope"] and "module" not in row["scope"] and row["scope"] != "machine"
    }
    assert len(function_scope) > 50
    with_lines = {row["index"] for row in mapped["snapshots"] if row["lines"]}
    assert function_scope <= with_lines


def test_the_server_prepares_each_stored_run_once(tmp_path):
    """app/insight/precompute.py: a stored run is pending until its map indexes are stored, then marked."""
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
        assert precompute.pending_runs(database) == [run["run"]]
        assert precompute.prepare_pending(database) == 1
        assert precompute.pending_runs(database) == []
        with database.session() as session:
            assert session.scalar(select(func.count()).select_from(LineIndex))
    finally:
        database.dispose()


def test_a_visit_and_the_background_prep_may_index_the_same_run_at_once(tmp_path, monkeypatch):
    """Both read that no index exists, then both store one: the second store keeps the first's rows
    instead of failing on the primary key (as a map visit did on PostgreSQL during the prep)."""
    from app.insight import line_index

    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
        compute = line_index._compute
        raced = []

        def compute_after_the_prep(*args):
            if not raced:  # the prep runs and commits between this visit's read and its store
                raced.append(True)
                precompute.prepare_run(database, run["run"])
            return compute(*args)

        monkeypatch.setattr(line_index, "_compute", compute_after_the_prep)
        with database.session() as session:
            compilation = session.scalars(select(Compilation)).first()
            snapshots = list(compilation.snapshots)
            entries = line_index.indexes_for(session, snapshots)
            session.commit()
            assert raced and len(entries) == len(snapshots)
            stored = session.scalar(select(func.count()).select_from(LineIndex))
        monkeypatch.setattr(line_index, "_compute", compute)
        with database.session() as session:
            again = line_index.indexes_for(session, list(session.scalars(select(Compilation)).first().snapshots))
            assert [entry.files for entry in again] == [entry.files for entry in entries]
            assert session.scalar(select(func.count()).select_from(LineIndex)) == stored
    finally:
        database.dispose()
