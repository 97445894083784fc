"""20 concurrent uploads and 50 concurrent readers against a real uvicorn server (bench/stress.py), on
the suite's database (SQLite in WAL mode, or PostgreSQL with IRLENS_TEST_DB_URL): no 5xx, no
"database is locked", no partial run visible, and every upload stored exactly as a solo ingest of the
same bytes stores it. Latencies are printed (pytest -s), never asserted."""

from __future__ import annotations

from pathlib import Path

from bench.server import serve
from bench.stress import stress
from tests.conftest import fresh_db_url


def test_twenty_uploads_and_fifty_readers_at_once_lose_nothing(tmp_path: Path) -> None:
    with serve(fresh_db_url(tmp_path), tmp_path) as (url, log_path):
        result = stress(url, log_path, uploads=20, readers=50, seconds=3)
    print("\n" + result.table())
    assert len(result.uploads) >= 20
    for name, kind in result.kinds.items():
        assert kind.errors == [], f"{name}: {kind.errors[:5]}"
        assert kind.server_errors == 0, name
    assert result.locked == 0 and result.tracebacks == 0, log_path.read_text()[-3000:]
    assert result.partial_seen == []
    assert result.lost == []


def test_a_sqlite_writer_waits_as_long_as_an_ingest_may_last(tmp_path: Path) -> None:
    """An ingest holds SQLite's write lock until it commits: the next writer queues for up to the
    ingest timeout instead of failing with "database is locked" after a fixed minute."""
    import sqlite3
    import threading
    import time

    import pytest
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from app.settings import Settings

    def settings(timeout: float) -> Settings:
        return Settings(data_dir=tmp_path, db_url=None, ingest_timeout_seconds=timeout)

    settings(5).database()  # creates the schema
    holder = sqlite3.connect(tmp_path / "irlens.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # what an ingest's first insert does
    threading.Timer(1.5, holder.rollback).start()

    with settings(0.3).database().session() as session, pytest.raises(OperationalError, match="locked"):
        session.execute(text("UPDATE runs SET title = 'x'"))
        session.commit()
    start = time.monotonic()
    with settings(30).database().session() as session:
        session.execute(text("UPDATE runs SET title = 'x'"))
        session.commit()
    assert time.monotonic() - start < 10  # it waited for the holder rather than failing
    holder.close()
