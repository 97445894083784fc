"""The schema through Alembic: from an empty database, from the previous revision with data in it, and
from a database made before irlens had migrations; the migrations and the models must agree."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Engine

from app.settings import Settings
from app.store.db import (
    INITIAL_REVISION,
    SCHEMA_REVISION,
    Database,
    alembic_config,
    current_revision,
    make_engine,
    migration_connection,
)
from app.store.db import upgrade_schema as upgrade
from app.store.models import Base
from app.web.app import create_app
from tests.conftest import fresh_db_url

RUN_ID = "0123456789abcdef0123456789abcdef"
BLOB = "ab" * 32
PACK = "cd" * 32
SLICE = "ef" * 32
CACHE_FOLDER = "up.tar.gz/cache/ABC"
ARTIFACTS = [
    (1, "ttir", f"{CACHE_FOLDER}/add_kernel.ttir", BLOB, BLOB),
    (2, "cubin", f"{CACHE_FOLDER}/add_kernel.cubin", "12" * 32, None),
    (3, "ptx", "dump/XYZ/add_kernel.ptx", BLOB, BLOB),
]


def differences(engine: Engine) -> list:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, Base.metadata)


def test_the_newest_revision_is_the_one_the_code_stamps():
    scripts = ScriptDirectory.from_config(alembic_config())
    assert scripts.get_current_head() == SCHEMA_REVISION
    assert [revision.revision for revision in scripts.walk_revisions()][-1] == INITIAL_REVISION


def test_migrations_from_an_empty_database_give_the_models_schema(tmp_path):
    engine = make_engine(fresh_db_url(tmp_path))
    try:
        with migration_connection(engine) as connection:
            command.upgrade(alembic_config(connection), "head")  # every migration, no shortcut
        with engine.connect() as connection:
            assert current_revision(connection) == SCHEMA_REVISION
        assert differences(engine) == []
    finally:
        engine.dispose()


def test_opening_an_empty_database_takes_the_fast_road_to_the_same_schema(tmp_path):
    database = Database(fresh_db_url(tmp_path))
    try:
        with database.engine.connect() as connection:
            assert current_revision(connection) == SCHEMA_REVISION
        assert differences(database.engine) == []
        assert upgrade(database.engine) == (SCHEMA_REVISION, SCHEMA_REVISION)
    finally:
        database.dispose()


def fill_initial_schema(engine: Engine) -> None:
    """Rows as revision 0001 stored them (plain SQL: today's models have columns 0001 lacks)."""
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO blobs (hash, size, codec, data) VALUES (:hash, 5, 'none', :data)"),
            {"hash": BLOB, "data": b"hello"},
        )
        connection.execute(
            text(
                "INSERT INTO runs (id, title, created_at, owner, tags, input_bytes, damaged, stats) "
                "VALUES (:id, 'before teams', :now, 'alice', '[\"old\"]', 5, 0, '{}')"
            ),
            {"id": RUN_ID, "now": now},
        )
        connection.execute(
            text(
                "INSERT INTO compilations (pk, run_id, ordinal, kernel, origin, status, counts, changed, cache_key) "
                "VALUES (1, :id, 1, 'add_kernel', 'log', 'ok', '{\"mlir\": 1}', 1, :folder)"
            ),
            {"id": RUN_ID, "folder": CACHE_FOLDER},
        )
        # a text of the cache folder, a binary beside it, and a file from elsewhere (a kernel dump's)
        for pk, kind, path, digest, blob in ARTIFACTS:
            connection.execute(
                text("INSERT INTO artifacts (pk, compilation_pk, kind, path, size, sha256, blob) "
                     "VALUES (:pk, 1, :kind, :path, 5, :digest, :blob)"),
                {"pk": pk, "kind": kind, "path": path, "digest": digest, "blob": blob},
            )
        connection.execute(
            text(
                'INSERT INTO snapshots (pk, compilation_pk, "index", kind, "when", pass_name, failed, stage, '
                "changed, line, size, line_count, blob, header) "
                "VALUES (1, 1, 0, 'mlir', 'before', 'Canonicalizer', false, 'ttir', true, 1, 5, 1, :blob, 'h')"
            ),
            {"blob": BLOB},
        )
        # A text stored as a slice of a pack (bytes 5.. of "hello world"), as ingest writes them.
        connection.execute(
            text("INSERT INTO blobs (hash, size, codec, data) VALUES (:hash, 11, 'none', :data)"),
            {"hash": PACK, "data": b"hello world"},
        )
        connection.execute(
            text("INSERT INTO blobs (hash, size, codec, data) VALUES (:hash, 6, 'zpack', :data)"),
            {"hash": SLICE, "data": f"{PACK}:5".encode()},
        )
        connection.execute(
            text(
                'INSERT INTO snapshots (pk, compilation_pk, "index", kind, "when", pass_name, failed, stage, '
                "changed, line, size, line_count, blob, header, scope) "
                "VALUES (2, 1, 1, 'mlir', 'before', 'CSE', false, 'ttir', true, 9, 6, 1, :blob, 'h', 'tt.func @f')"
            ),
            {"blob": SLICE},
        )
        connection.execute(
            text(
                "INSERT INTO api_tokens (pk, name, token_hash, created_at) VALUES (1, 'alice', :hash, :now)"
            ),
            {"hash": "cd" * 32, "now": now},
        )


def check_data_survived(url: str, tmp_path: Path) -> None:
    settings = Settings(db_url=url, data_dir=tmp_path, load_demo=False, require_token=True)
    with TestClient(create_app(settings)) as client:
        run = client.get(f"/runs/{RUN_ID}.json")
        assert run.status_code == 200, run.text
        fields = run.json()
        assert (fields["title"], fields["owner"], fields["tags"], fields["listed"]) == (
            "before teams",
            "alice",
            ["old"],
            True,
        )
        assert fields["compilations"][0]["kernel"] == "add_kernel"
        files = client.get(f"/runs/{RUN_ID}/c/1.json").json()["files"]
        assert sorted((f["kind"], f["path"], f["sha256"]) for f in files) == sorted(
            (kind, path, digest) for _, kind, path, digest, _ in ARTIFACTS)
        assert client.get(f"/runs/{RUN_ID}/c/1/s/0/raw").text == "hello"
        # Both snapshots printed the banner "h" but stored other pass names: revision 0011 moves a
        # banner's fields onto its row and gives each distinct set of fields a row of its own.
        shown = [client.get(f"/runs/{RUN_ID}/c/1/s/{index}.json").json() for index in (0, 1)]
        assert [(s["pass"], s["when"], s["kind"], s["scope"], s["failed"], s["stage"]) for s in shown] == [
            ("Canonicalizer", "before", "mlir", None, False, "ttir"), ("CSE", "before", "mlir", "tt.func @f", False, "ttir")]
        assert client.get(f"/runs/{RUN_ID}/c/1/s/1/raw").text == " world"
        with client.app.state.db.engine.connect() as connection:
            # Revision 0003 names each slice's pack, so collecting blobs keeps the pack.
            # (revision 0010 stores hashes as 32 bytes; revision 0013 names the pack by its id)
            slice_key = {"h": bytes.fromhex(SLICE)}
            assert bytes(connection.scalar(text(
                "SELECT p.hash FROM blobs s JOIN blobs p ON p.id = s.pack_id WHERE s.hash = :h"), slice_key)) == bytes.fromhex(PACK)
            # Revision 0013: snapshots name their text by the blob's id.
            assert [bytes(h) for h in connection.scalars(text(
                "SELECT b.hash FROM snapshots s JOIN blobs b ON b.id = s.blob_id ORDER BY s.compilation_pk, s.\"index\""))] == [
                bytes.fromhex(BLOB), bytes.fromhex(SLICE)]
            # ... and store the stage's name as its place in app/store/models.py's STAGE_NAMES
            assert connection.scalars(text('SELECT stage FROM snapshots ORDER BY "index"')).all() == ["\x01", "\x01"]
            # Revision 0015: a cache folder's file by its path below the folder, no hash beside `blob`
            assert connection.execute(text("SELECT path, in_folder, sha256 FROM artifacts ORDER BY pk")).all() == [
                ("add_kernel.ttir", True, None), ("add_kernel.cubin", True, bytes.fromhex("12" * 32)),
                ("dump/XYZ/add_kernel.ptx", False, None)]
            # Revision 0010 keeps the slice's offset alone in its data (the pack is in `pack`).
            assert bytes(connection.scalar(text("SELECT data FROM blobs WHERE hash = :h"), slice_key)) == b"5"
        # Runs from before revision 0002 were on everyone's home page: they stay listed.
        assert [r["run"] for r in client.get("/index.json").json()["runs"]] == [RUN_ID]
        with client.app.state.db.engine.connect() as connection:
            assert current_revision(connection) == SCHEMA_REVISION
            assert connection.scalar(text("SELECT name FROM api_tokens")) == "alice"
            indexes = {index["name"] for index in inspect(connection).get_indexes("snapshots")}
            assert "ix_snapshots_blob_id" in indexes
            # Revision 0014: keyed by (compilation, index), with no second index for that key
            assert inspect(connection).get_pk_constraint("snapshots")["constrained_columns"] == ["compilation_pk", "index"]
            assert "ix_snapshot_compilation_index" not in indexes
            if connection.dialect.name == "sqlite":
                assert "WITHOUT ROWID" in connection.scalar(text("SELECT sql FROM sqlite_master WHERE name = 'snapshots'"))
        assert differences(client.app.state.db.engine) == []


def test_upgrading_from_the_previous_revision_keeps_the_data(tmp_path):
    url = fresh_db_url(tmp_path)
    engine = make_engine(url)
    try:
        assert upgrade(engine, INITIAL_REVISION) == (None, INITIAL_REVISION)
        with engine.connect() as connection:
            assert "listed" not in {column["name"] for column in inspect(connection).get_columns("runs")}
        fill_initial_schema(engine)
    finally:
        engine.dispose()
    check_data_survived(url, tmp_path)  # the app upgrades on start


def test_a_database_made_before_migrations_is_adopted_as_revision_0001(tmp_path):
    url = fresh_db_url(tmp_path)
    engine = make_engine(url)
    try:
        upgrade(engine, INITIAL_REVISION)
        fill_initial_schema(engine)
        with engine.begin() as connection:
            connection.execute(text("DROP TABLE alembic_version"))  # what create_all used to leave
    finally:
        engine.dispose()
    check_data_survived(url, tmp_path)


def test_db_upgrade_command_and_downgrade_round_trip(tmp_path):
    url = fresh_db_url(tmp_path)
    engine = make_engine(url)
    try:
        upgrade(engine, INITIAL_REVISION)
        fill_initial_schema(engine)
    finally:
        engine.dispose()
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "db", "upgrade", "--db", url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.strip()
        == f"upgraded the database schema from {INITIAL_REVISION} to revision {SCHEMA_REVISION}"
    )
    again = subprocess.run(
        [sys.executable, "-m", "app.cli", "db", "upgrade", "--db", url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.stdout.strip() == f"the database schema is at revision {SCHEMA_REVISION}"
    engine = make_engine(url)
    try:
        with migration_connection(engine) as connection:
            command.downgrade(alembic_config(connection), INITIAL_REVISION)
        with engine.connect() as connection:
            assert current_revision(connection) == INITIAL_REVISION
            assert connection.scalar(text("SELECT title FROM runs")) == "before teams"
            # hashes are hex text again, slices name their pack in their data
            assert connection.scalar(text("SELECT blob FROM snapshots WHERE pk = 2")) == SLICE
            assert connection.scalars(text("SELECT stage FROM snapshots ORDER BY pk")).all() == ["ttir", "ttir"]
            assert connection.execute(text(
                'SELECT pass_name, scope FROM snapshots ORDER BY pk')).all() == [("Canonicalizer", None), ("CSE", "tt.func @f")]
            assert bytes(connection.scalar(text("SELECT data FROM blobs WHERE hash = :h"), {"h": SLICE})) == f"{PACK}:5".encode()
            assert connection.execute(text("SELECT kind, path, sha256, blob FROM artifacts ORDER BY pk")).all() == [
                (kind, path, digest, blob) for _, kind, path, digest, blob in ARTIFACTS]
    finally:
        engine.dispose()
    check_data_survived(url, tmp_path)


@pytest.mark.parametrize("revision", [INITIAL_REVISION, SCHEMA_REVISION])
def test_each_revision_downgrades_to_nothing(tmp_path, revision):
    engine = make_engine(fresh_db_url(tmp_path))
    try:
        upgrade(engine, revision)
        with migration_connection(engine) as connection:
            command.downgrade(alembic_config(connection), "base")
        with engine.connect() as connection:
            assert set(inspect(connection).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()


def test_banner_fields_survive_a_downgrade_to_0010_and_back_and_line_indexes_are_made_again(tmp_path):
    """Revision 0011 moves the banner's fields onto its row: a real capture's snapshots show the same
    fields at 0010 and at 0011 again. Its line indexes (derived rows) are dropped both ways with the
    runs' "prepared" mark, and the preparation makes the same indexes again."""
    from app.insight import precompute
    from app.store.models import Compilation
    from tests.conftest import corpus_archive, ingest_paths, map_indexes

    def metadata(database: Database) -> list:
        with database.session() as session:
            return [c.metadata_json for c in session.scalars(select(Compilation).order_by(Compilation.pk))]

    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [corpus_archive("sm90_llvm")])
        precompute.prepare_run(database, run["run"])
        before = map_indexes(database)
        cache_metadata = metadata(database)
    finally:
        database.dispose()
    assert sum(len(entry[0]) for compilation in before for entry in compilation) > 50
    assert any(cache_metadata)
    assert sum(bool(lines) for compilation in before for entry in compilation for lines in entry[1]) > 500
    engine = make_engine(url)
    order = ' ORDER BY s.compilation_pk, s."index"'
    fields = ('SELECT s.compilation_pk, s."index", b.text, b.kind, b."when", b.pass_name, b.pass_arg, b.pass_options, '
              "b.failed, coalesce(s.unit, b.scope) FROM snapshots s JOIN banners b ON b.pk = s.banner_pk" + order)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(fields)).all()
        with migration_connection(engine) as connection:
            command.downgrade(alembic_config(connection), "0010")
        with engine.connect() as connection:
            old = connection.execute(text(
                'SELECT s.compilation_pk, s."index", b.text, s.kind, s."when", s.pass_name, s.pass_arg, s.pass_options, '
                "s.failed, s.scope FROM snapshots s JOIN banners b ON b.pk = s.banner_pk" + order
            )).all()
            assert connection.scalar(text("SELECT count(*) FROM line_indexes")) == 0
            stored = connection.scalar(text("SELECT metadata_json FROM compilations WHERE metadata_json IS NOT NULL"))
            assert (json.loads(stored) if isinstance(stored, str) else stored) in cache_metadata
        assert [tuple(row) for row in old] == [tuple(row) for row in rows]
        with migration_connection(engine) as connection:
            command.upgrade(alembic_config(connection), "head")
        with engine.connect() as connection:
            assert [tuple(row) for row in connection.execute(text(fields))] == [tuple(row) for row in rows]
            assert connection.scalar(text("SELECT count(*) FROM line_indexes")) == 0
        assert differences(engine) == []
    finally:
        engine.dispose()
    database = Database(url)
    try:
        assert precompute.pending_runs(database) == [run["run"]]
        precompute.prepare_run(database, run["run"])
        assert map_indexes(database) == before
        assert metadata(database) == cache_metadata  # zlib at 0011, JSON at 0010, zlib again
    finally:
        database.dispose()


def test_a_new_sqlite_file_gets_2k_pages_and_an_existing_one_keeps_its_own(tmp_path):
    import sqlite3

    from app.store.db import SQLITE_PAGE_SIZE

    old = tmp_path / "old.db"
    with sqlite3.connect(old) as connection:  # a file made by another program, 4 KB pages
        connection.execute("PRAGMA page_size=4096")
        connection.execute("CREATE TABLE other (x INTEGER)")
    for path, expected in ((tmp_path / "new.db", SQLITE_PAGE_SIZE), (old, 4096)):
        Database(f"sqlite:///{path}").dispose()
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA page_size").fetchone()[0] == expected
            connection.execute("VACUUM")
            assert connection.execute("PRAGMA page_size").fetchone()[0] == expected


def test_the_recompression_index_is_partial_both_ways_and_the_models_load_no_postgresql_code(tmp_path):
    # Only frames awaiting recompression are indexed, however the schema was made.
    for made_by in ("create_all", "migrations"):
        engine = make_engine(fresh_db_url(tmp_path / made_by))
        try:
            if made_by == "create_all":
                upgrade(engine)
            else:
                with migration_connection(engine) as connection:
                    command.upgrade(alembic_config(connection), "head")
            with engine.connect() as connection:
                index = next(i for i in inspect(connection).get_indexes("blobs") if i["name"] == "ix_blobs_to_recompress")
                if engine.dialect.name == "postgresql":
                    assert "zstd" in index["dialect_options"]["postgresql_where"]
                else:
                    sql = connection.scalar(text("SELECT sql FROM sqlite_master WHERE name = 'ix_blobs_to_recompress'"))
                    assert "WHERE codec IN ('zstd', 'zstdm')" in sql  # fresh and quick (0020_i32)
        finally:
            engine.dispose()
    # PostgreSQL's dialect is loaded by a PostgreSQL engine only (~50 ms of every CLI command otherwise).
    probe = "import sys, app.store.db, app.ingest.pipeline; print('sqlalchemy.dialects.postgresql' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"


def test_line_indexes_go_from_hashes_to_blob_ids_and_back_and_lose_their_orphans(tmp_path):
    """Revision 0016 keys `line_indexes` by blob id. An index whose blob is gone (left by a deletion
    before 0016) is dropped, with the pack only it used; the others read the same after both ways."""
    from app.insight import precompute
    from tests.conftest import corpus_archive, ingest_paths, map_indexes

    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [corpus_archive("sm90_llvm")])
        precompute.prepare_run(database, run["run"])
        before = map_indexes(database)
    finally:
        database.dispose()
    engine = make_engine(url)
    columns = "context, flags, pack, start, size"
    try:
        with migration_connection(engine) as connection:
            command.downgrade(alembic_config(connection), "0015")
        with engine.begin() as connection:
            rows = connection.execute(text(f"SELECT blob, {columns} FROM line_indexes ORDER BY blob, context")).all()
            packs = connection.scalar(text("SELECT count(*) FROM line_index_packs"))
            assert len(rows) > 50 and packs
            # An orphan, as a deletion before 0016 left them: a gone blob's index in a pack of its own.
            connection.execute(text("INSERT INTO line_index_packs (pk, data) VALUES (9999, :data)"), {"data": b"x"})
            connection.execute(text(f"INSERT INTO line_indexes (blob, {columns}) VALUES (:blob, 'mlir', 0, 9999, 0, 1)"),
                               {"blob": bytes(32)})
        with migration_connection(engine) as connection:
            command.upgrade(alembic_config(connection), "head")
        with engine.connect() as connection:
            assert connection.scalar(text("SELECT count(*) FROM line_indexes")) == len(rows)
            assert connection.scalar(text("SELECT count(*) FROM line_index_packs")) == packs
            assert connection.execute(text(
                f"SELECT b.hash, {', '.join('l.' + c for c in columns.split(', '))} FROM line_indexes l "
                "JOIN blobs b ON b.id = l.blob_id ORDER BY b.hash, l.context")).all() == rows
        assert differences(engine) == []
    finally:
        engine.dispose()
    database = Database(url)
    try:
        assert map_indexes(database) == before
    finally:
        database.dispose()
