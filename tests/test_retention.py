"""Deleting a run collects the blobs only it used; retention deletes old runs on a schedule and from the CLI."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from app.settings import Settings
from app.store.blobs import BlobWriter
from app.store.db import Database
from app.store.models import Blob, Run
from app.store.retention import apply_retention, collect_all_blobs, delete_run, expired_runs, run_blobs
from app.web.app import create_app
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths, map_indexes

FIXTURE_LOG = FIXTURES / "sm90_add_kernel_dump.log.gz"


def blob_hashes(db: Database) -> set[str]:
    with db.session() as session:
        return set(session.scalars(select(Blob.hash)))


def age(db: Database, run_id: str, days: float) -> None:
    with db.session() as session:
        session.execute(
            update(Run).where(Run.id == run_id).values(created_at=datetime.now(UTC) - timedelta(days=days))
        )
        session.commit()


def test_deleting_a_run_keeps_the_blobs_another_run_shares(db, caplog):
    archive = corpus_archive("sm90_mix")
    first = ingest_paths(db, [archive], title="first")
    second = ingest_paths(db, [archive], title="second")
    other = ingest_paths(db, [FIXTURE_LOG], title="other")
    with db.session() as session:
        first_blobs = run_blobs(session, first["run"])
        other_blobs = run_blobs(session, other["run"])
        assert first_blobs == run_blobs(session, second["run"])  # the same corpus: every blob shared
    before = blob_hashes(db)
    assert first_blobs | other_blobs <= before
    assert len(first_blobs) > 100

    with caplog.at_level(logging.INFO, logger="irlens"):
        deleted = delete_run(db, first["run"])
    assert deleted is not None and deleted.blobs == 0
    assert blob_hashes(db) == before
    assert f"run {first['run']}" in caplog.text
    with db.session() as session:
        assert session.get(Run, first["run"]) is None
        assert session.get(Run, second["run"]) is not None

    # The last run using them goes: its blobs go too, except those the fixture run shares.
    deleted = delete_run(db, second["run"])
    # (plus the packs those texts were slices of, once no kept text points into them)
    assert deleted.blobs >= len(first_blobs - other_blobs) > 0
    assert blob_hashes(db) <= before - (first_blobs - other_blobs)
    assert other_blobs <= blob_hashes(db)
    assert delete_run(db, second["run"]) is None


def test_a_deleted_runs_rows_are_all_gone_and_the_rest_still_reads(tmp_path):
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        db = client.app.state.db
        keep = ingest_paths(db, [FIXTURE_LOG], title="keep")
        drop = ingest_paths(db, [FIXTURE_LOG], title="drop")
        response = client.delete(drop["url"])
        assert response.status_code == 200
        assert response.json() == {"deleted": drop["run"], "title": "drop", "blobs_removed": 0}
        with db.session() as session:
            from app.store.models import Compilation, Diagnostic, InputRecord, Problem, Snapshot, Source

            for model in (Compilation, Diagnostic, InputRecord, Problem, Source):
                assert not session.scalar(
                    select(func.count()).select_from(model).where(model.run_id == drop["run"])
                )
            assert session.scalar(select(func.count()).select_from(Snapshot)) == 78  # keep's 76 + 2 internal
        snapshot = keep["compilations"][0]["url"] + "/s/5/raw"
        assert client.get(snapshot).status_code == 200
        assert client.get(snapshot).text.strip()


def test_retention_deletes_runs_older_than_the_setting(db, caplog):
    old = ingest_paths(db, [FIXTURE_LOG], title="old")
    recent = ingest_paths(db, [FIXTURE_LOG], title="recent")
    age(db, old["run"], 40)
    age(db, recent["run"], 10)
    with db.session() as session:
        assert expired_runs(session, 30) == [old["run"]]
    with caplog.at_level(logging.INFO, logger="irlens"):
        deleted = apply_retention(db, 30)
    assert [d.run for d in deleted] == [old["run"]]
    assert "retention" in caplog.text and old["run"] in caplog.text
    with db.session() as session:
        assert session.scalars(select(Run.id)).all() == [recent["run"]]
    assert apply_retention(db, 30) == []
    # The last run's blobs are all still there: it shared every one with the deleted run.
    with db.session() as session:
        assert run_blobs(session, recent["run"]) <= blob_hashes(db)


def test_retention_runs_in_the_background_when_the_app_starts(tmp_path):
    url = fresh_db_url(tmp_path)
    settings = Settings(db_url=url, data_dir=tmp_path, load_demo=False, retention_days=7)
    app = create_app(settings)
    db = app.state.db
    old = ingest_paths(db, [FIXTURE_LOG], title="old")
    young = ingest_paths(db, [FIXTURE_LOG], title="young")
    age(db, old["run"], 8)
    with TestClient(app) as client:
        deadline = time.monotonic() + 20
        while client.get(old["url"] + ".json").status_code != 404:
            assert time.monotonic() < deadline, "the retention task did not run"
            time.sleep(0.05)
        assert client.get(young["url"] + ".json").status_code == 200


def test_gc_command_applies_retention_and_sweeps_unused_blobs(db):
    old = ingest_paths(db, [FIXTURE_LOG], title="old")
    age(db, old["run"], 3)
    with db.session() as session:
        used = run_blobs(session, old["run"])
        writer = BlobWriter(session)
        orphan = writer.put(b"a blob no run refers to")
        writer.flush()
        session.commit()
    command = [sys.executable, "-m", "app.cli", "gc", "--db", db.url]
    dry = subprocess.run([*command, "--days", "2", "--dry-run"], capture_output=True, text=True, check=False)
    assert dry.returncode == 0 and f"would delete run {old['run']}" in dry.stdout
    assert orphan in blob_hashes(db)
    kept = subprocess.run([*command, "--days", "5"], capture_output=True, text=True, check=False)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.startswith("removed ") and kept.stdout.endswith(" blobs no run used\n")
    with db.session() as session:
        packs = set(session.scalars(select(Blob.pack).where(Blob.hash.in_(used), Blob.pack_id.is_not(None))))
    assert blob_hashes(db) == used | packs  # the orphan went, the run's blobs (and their packs) stayed
    gone = subprocess.run(
        [sys.executable, "-m", "app.cli", "retention", "--db", db.url, "--days", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert gone.returncode == 0 and f"deleted run {old['run']}" in gone.stdout
    assert blob_hashes(db) == set()
    with db.session() as session:
        assert collect_all_blobs(session) == 0


def test_delete_command_removes_runs_by_id(db):
    run = ingest_paths(db, [FIXTURE_LOG])
    with db.session() as session:
        used = run_blobs(session, run["run"])
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "delete", run["run"], "nosuchrun", "--db", db.url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert f"deleted run {run['run']}" in result.stdout and "no run nosuchrun" in result.stderr
    assert not used & blob_hashes(db)


def test_packs_live_while_any_of_their_texts_is_used(db, tmp_path):
    """New texts are stored as slices of zstd packs: collecting must keep a pack that a kept row
    points into, and free it once the last slice goes."""
    from app.store.blobs import BlobReader
    from app.store.models import Compilation, Snapshot

    archive = corpus_archive("sm90_llvm")
    first = ingest_paths(db, [archive])
    second = ingest_paths(db, [archive])
    with db.session() as session:
        assert session.scalar(select(func.count()).where(Blob.codec == "zpack")) > 0
        assert collect_all_blobs(session) == 0  # nothing is garbage right after an ingest
        session.commit()
    delete_run(db, first["run"])
    with db.session() as session:
        reader = BlobReader()
        hashes = session.scalars(
            select(Snapshot.blob).join(Compilation).where(Compilation.run_id == second["run"])
        ).all()
        assert hashes and all(reader.get(session, h) is not None for h in hashes)
    delete_run(db, second["run"])
    with db.session() as session:
        assert session.scalar(select(func.count(Blob.hash))) == 0


def test_deleting_a_run_deletes_its_texts_map_line_indexes_and_their_packs(db):
    from app.insight import precompute
    from app.store.models import LineIndex, LineIndexPack

    def counts() -> tuple[int, int]:
        with db.session() as session:
            return (session.scalar(select(func.count()).select_from(LineIndex)),
                    session.scalar(select(func.count()).select_from(LineIndexPack)))

    first = ingest_paths(db, [corpus_archive("sm90_llvm")], title="first")
    second = ingest_paths(db, [FIXTURE_LOG], title="second")
    precompute.prepare_run(db, second["run"])
    kept = map_indexes(db, second["run"])
    second_only = counts()
    precompute.prepare_run(db, first["run"])
    assert counts()[0] > second_only[0] > 0 and counts()[1] > second_only[1] > 0

    delete_run(db, first["run"])

    assert counts() == second_only  # the two captures share no text
    with db.session() as session:
        assert session.scalar(select(func.count()).select_from(LineIndex).where(
            LineIndex.blob_id.not_in(select(Blob.id)))) == 0
        used = set(session.scalars(select(LineIndex.pack).where(LineIndex.pack.is_not(None))))
        assert set(session.scalars(select(LineIndexPack.pk))) == used
    assert map_indexes(db, second["run"]) == kept
    assert precompute.pending_runs(db) == []  # the kept run's indexes did not have to be made again
