"""SIGKILL an `irlens ingest` at random points, and once inside its final commit: the database stays
consistent, holds no partial run and no orphan rows, nothing left on disk blocks the next ingest, and
the next ingest is complete. On SQLite by default, on PostgreSQL with IRLENS_TEST_DB_URL.

Each attempt ingests every corpus archive plus the real sm90 fixture log with its kernel renamed for
that attempt (`@add_kernel` -> `@add_kernel_k3`), so every attempt has snapshots of its own: a killed
attempt that left any of its rows behind (blobs included) changes the row counts.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from app.insight.page_data import run_summary
from app.store.db import Database, make_engine
from app.urls import Urls
from tests.conftest import CORPUS, FIXTURES, REPO, fresh_db_url

SEED = 20240611
RANDOM_KILLS = 5
# Seconds after the ingest's COMMIT starts when the kill lands: 0 is before the database sees it,
# the others inside it or after it (a commit of this run takes a few milliseconds).
COMMIT_KILL_DELAYS = (0.0, 0.002, 0.05)
TABLES = ("runs", "compilations", "snapshots", "artifacts", "timings", "sources", "diagnostics", "inputs",
          "problems", "blobs")
# Columns that name a blob, by hash or by id: none may point at a missing one.
BLOB_REFERENCES = (("snapshots", "blob_id", "id"), ("artifacts", "blob", "hash"), ("sources", "blob", "hash"),
                   ("inputs", "log_blob", "hash"), ("problems", "blob", "hash"), ("blobs", "pack_id", "id"))

# Runs `irlens` with a hook that SIGKILLs the process once the ingest's session starts committing
# (after KILL_IN_COMMIT seconds, from a timer thread, so the kill can land inside the commit itself).
KILL_IN_COMMIT = """
import os, signal, sys, threading
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

delay = float(os.environ["KILL_IN_COMMIT"])
committing = []

@event.listens_for(Session, "before_commit")
def _session_commits(session):
    committing.append(True)

@event.listens_for(Engine, "commit")
def _dbapi_commit(connection):
    if not committing:
        return  # schema checks on start-up commit too
    if delay == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()

from app.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _inputs(where: Path, attempt: int) -> list[str]:
    log = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())
    folder = where / f"attempt{attempt}"
    folder.mkdir()
    renamed = folder / "renamed.log"
    renamed.write_bytes(log.replace(b"@add_kernel", f"@add_kernel_k{attempt}".encode()))
    return [*map(str, sorted(CORPUS.glob("*.tar.xz"))), str(renamed)]


def _ingest_command(db_url: str, paths: list[str], commit_delay: float | None = None) -> list[str]:
    # --no-compact: the kills are aimed at the ingest and its commit, and the row counts compared
    # include the packs compaction would merge. (The suite turns compaction off anyway: conftest.)
    options = ["ingest", "--db", db_url, "--json", "--quiet", "--no-compact", *paths]
    if commit_delay is None:
        return [sys.executable, "-m", "app.cli", *options]
    return [sys.executable, "-c", KILL_IN_COMMIT, *options]


def _normal(summary: dict) -> str:
    """A run's JSON without what differs between two ingests of the same input."""
    summary = {key: value for key, value in summary.items() if key not in ("created_at", "stats", "title", "compaction")}
    # A log's id is its database key: it counts every run's inputs.
    summary["logs"] = [{k: v for k, v in log.items() if k not in ("id", "url")} for log in summary["logs"]]
    shown = json.dumps(summary, sort_keys=True).replace(summary["run"], "RUN")
    return re.sub(r"add_kernel_k\d+", "add_kernel_kN", shown)


def _check_consistent(db_url: str, expected_run: str) -> dict[str, int]:
    """Integrity, foreign keys, no partial run, no dangling blob reference; every run complete.
    Returns the row count of every table."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "sqlite":
                assert connection.exec_driver_sql("PRAGMA integrity_check").scalars().all() == ["ok"]
                assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []
            for table, column, key in BLOB_REFERENCES:
                dangling = connection.execute(text(
                    f"SELECT count(*) FROM {table} t WHERE t.{column} IS NOT NULL "
                    f"AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.{key} = t.{column})"
                )).scalar()
                assert dangling == 0, f"{dangling} rows of {table}.{column} name a missing blob"
            empty = connection.execute(text(
                "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM compilations c WHERE c.run_id = r.id)"
            )).scalar()
            assert empty == 0, "a run without its compilations is visible"
            counts = {table: connection.execute(text(f"SELECT count(*) FROM {table}")).scalar() for table in TABLES}
            run_ids = connection.execute(text("SELECT id FROM runs")).scalars().all()
    finally:
        engine.dispose()
    database = Database(db_url, upgrade=False)
    try:
        with database.session() as session:
            from app.store.models import Run

            for run_id in run_ids:
                assert _normal(run_summary(session, session.get(Run, run_id), Urls())) == expected_run
    finally:
        database.dispose()
    return counts


def _leftovers(data_dir: Path, tmp_dir: Path) -> list[str]:
    """Files a killed ingest may leave: only the SQLite database, its WAL files and the lock file are
    expected (flock locks die with their process, so the lock file blocks nobody)."""
    allowed = re.compile(r"irlens\.db(-wal|-shm|\.migrate-lock)?$")
    files = [path.name for path in data_dir.iterdir() if not allowed.match(path.name)]
    return files + [f"TMPDIR/{path.name}" for path in tmp_dir.iterdir()]


def test_sigkilled_ingests_leave_a_consistent_database(tmp_path: Path) -> None:
    if not any(CORPUS.glob("*.tar.xz")):
        pytest.skip("../shared/corpus is not available")
    data_dir, tmp_dir = tmp_path / "data", tmp_path / "tmp"
    data_dir.mkdir()
    tmp_dir.mkdir()
    db_url = fresh_db_url(data_dir)
    env = {**os.environ, "TMPDIR": str(tmp_dir), "IRLENS_DATA_DIR": str(data_dir)}
    env.pop("IRLENS_DB_URL", None)

    def ingest(attempt: int) -> tuple[dict, float]:
        started = time.monotonic()
        done = subprocess.run(_ingest_command(db_url, _inputs(tmp_path, attempt)), cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), time.monotonic() - started

    first, duration = ingest(0)
    expected = _normal(first)
    counts = _check_consistent(db_url, expected)
    per_run = {table: count for table, count in counts.items()}
    rng = random.Random(SEED)
    outcomes: list[str] = []
    kills = [("random", rng.uniform(0.05, 1.0) * duration) for _ in range(RANDOM_KILLS)]
    kills += [("commit", delay) for delay in COMMIT_KILL_DELAYS]
    for attempt, (kind, moment) in enumerate(kills, start=1):
        paths = _inputs(tmp_path, attempt)
        if kind == "random":
            process = subprocess.Popen(_ingest_command(db_url, paths), cwd=REPO, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(moment)
            process.send_signal(signal.SIGKILL)
        else:
            process = subprocess.Popen(_ingest_command(db_url, paths, commit_delay=moment), cwd=REPO,
                                       env={**env, "KILL_IN_COMMIT": str(moment)},
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        returncode = process.wait(timeout=300)
        before = counts
        counts = _check_consistent(db_url, expected)
        if counts["runs"] == before["runs"]:
            assert counts == before, f"a killed ingest left rows behind: {before} -> {counts}"
            result = "rolled back"
        else:
            # Killed after its commit: the run is whole (checked above), every table grew by one run's rows
            # but blobs, which the corpus part shares with earlier runs.
            assert counts["runs"] == before["runs"] + 1
            grown = {table: counts[table] - before[table] for table in TABLES if table != "blobs"}
            assert grown == {table: per_run[table] for table in TABLES if table != "blobs"}
            result = "committed whole"
        assert returncode in (-signal.SIGKILL, 0), returncode
        assert _leftovers(data_dir, tmp_dir) == []
        outcomes.append(f"{kind} kill at {moment:.3f}s: {result}")
    # The next ingest works and is complete.
    last, _ = ingest(len(kills) + 1)
    assert _normal(last) == expected
    counts_after = _check_consistent(db_url, expected)
    assert counts_after["runs"] == counts["runs"] + 1
    print(f"\ningest takes {duration:.2f}s; " + "; ".join(outcomes))
