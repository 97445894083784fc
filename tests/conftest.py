"""Shared fixtures: the corpus (skipped when ../shared is absent) and a database per test session.

Set IRLENS_TEST_DB_URL to run the suite against PostgreSQL; the default is a SQLite file.
"""

from __future__ import annotations

import itertools
import os
import re
import tarfile
from pathlib import Path

import pytest
from sqlalchemy import make_url, text

from app.ingest.pipeline import Ingest
from app.insight.page_data import run_summary
from app.store.db import Database, make_engine
from app.urls import Urls

# Servers started by tests do not recompress stored texts in the background (level 19 takes ~25 s
# of CPU for the corpus, beside the test); tests/test_recompress.py turns it on where it is tested.
os.environ.setdefault("IRLENS_RECOMPRESS_LEVEL", "0")

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def corpus_archive(name: str) -> Path:
    path = CORPUS / f"{name}.tar.xz"
    if not path.exists():
        pytest.skip(f"corpus archive {path} is not available (../shared is absent)")
    return path


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available")
    return CORPUS


@pytest.fixture(scope="session")
def unpacked_corpus(tmp_path_factory) -> Path:
    """All corpus archives unpacked once per session."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available")
    root = tmp_path_factory.mktemp("corpus")
    for archive in sorted(CORPUS.glob("*.tar.xz")):
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
    return root


def fresh_db_url(tmp_path: Path) -> str:
    """An empty database: a SQLite file under tmp_path, or with IRLENS_TEST_DB_URL a new PostgreSQL
    database beside the one named there. A database of its own per caller, so a module's fixture
    and a test's keep each other's rows (dropping shared tables broke module-scoped fixtures)."""
    url = os.environ.get("IRLENS_TEST_DB_URL")
    if not url:
        return f"sqlite:///{tmp_path / 'irlens.db'}"
    base = make_url(url)
    name = f"{base.database}_{next(_DATABASES)}_{os.getpid()}"
    engine = make_engine(url)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


_DATABASES = itertools.count(1)


@pytest.fixture
def db(tmp_path: Path):
    database = Database(fresh_db_url(tmp_path))
    yield database
    database.dispose()


@pytest.fixture(scope="session")
def session_db(tmp_path_factory):
    database = Database(fresh_db_url(tmp_path_factory.mktemp("session-db")))
    yield database
    database.dispose()


def ingest_paths(database: Database, paths, **options) -> dict:
    with database.session() as session:
        run = Ingest(session, **options).ingest(paths)
        session.commit()
        return run_summary(session, run, Urls())


@pytest.fixture(scope="session")
def corpus_runs(session_db):
    """Each corpus archive ingested once, exactly as shipped: name -> the ingest JSON."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available")
    return {
        archive.name.removesuffix(".tar.xz"): ingest_paths(session_db, [archive])
        for archive in sorted(CORPUS.glob("*.tar.xz"))
    }


def form_token(client, page: str = "/") -> str:
    """The CSRF token a page's forms carry, as a browser sees it (the client keeps the cookie)."""
    match = re.search(r'name="csrf_token" value="([0-9a-f]+)"', client.get(page).text)
    assert match, f"no CSRF token on {page}"
    return match.group(1)


def csrf_header(client, page: str = "/") -> dict[str, str]:
    """For a cookie-carrying client's scripted change (PATCH, DELETE): the header pages' scripts send."""
    return {"X-CSRF-Token": form_token(client, page)}


def map_indexes(database: Database, run_id: str | None = None) -> list:
    """What the map pages read of each compilation (of one run, or all): per snapshot, its located
    files and the IR lines of Python lines 1-119 of each."""
    from sqlalchemy import select

    from app.insight import source_map
    from app.store.models import Compilation

    source_map.clear()
    query = select(Compilation).order_by(Compilation.pk)
    if run_id is not None:
        query = query.where(Compilation.run_id == run_id)
    with database.session() as session:
        return [[(entry.files, [entry.lines(file, line) for file in entry.files for line in range(1, 120)])
                 for entry in source_map.pass_indexes(session, compilation.snapshots)]
                for compilation in session.scalars(query)]


def stored_blobs(db_url: str) -> tuple[int, int]:
    """(bytes of blob data stored, frames still as ingest compressed them: codec zstd, which
    compaction rewrites) of the database at db_url."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            data = connection.execute(text("SELECT coalesce(sum(length(data)), 0) FROM blobs")).scalar()
            fresh = connection.execute(text("SELECT count(*) FROM blobs WHERE codec = 'zstd'")).scalar()
    finally:
        engine.dispose()
    return int(data), int(fresh)
