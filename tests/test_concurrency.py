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
