"""app/web/warm_pages.py: a starting server renders one small snapshot page of each kind, and a line
window of it, through the app itself (so its first visitor does not pay one-time costs)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select

from app.settings import Settings
from app.store.db import Database
from app.store.models import Banner, Snapshot
from app.web.app import create_app
from app.web.warm_pages import MIN_LINES, warm_paths, warm_up
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths


def _run(coroutine):
    """asyncio.run in a thread of its own: a browser test earlier in the session may leave an event
    loop running in this one (Playwright's sync API)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_warm_up_renders_a_page_and_a_window_of_each_kind(tmp_path):
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
    finally:
        database.dispose()
    app = create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path), background=False)
    try:
        paths = warm_paths(app)
        with app.state.db.session() as session:
            kinds = set(session.scalars(
                select(Banner.kind).join(Snapshot, Snapshot.banner_pk == Banner.pk).where(Snapshot.line_count >= MIN_LINES)
            ))
        assert len(kinds) >= 2 and len(paths) == 2 * len(kinds)  # MLIR and LLVM dumps here
        assert all(path.startswith(f"/runs/{run['run']}/c/") for path in paths)
        assert _run(warm_up(app)) == len(paths)
    finally:
        app.state.db.dispose()


def test_a_newest_run_without_ir_does_not_stop_the_warm_up(tmp_path):
    """The newest upload may hold no IR (here a bare Python file): the warm-up looks at older runs."""
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
        source = tmp_path / "kernel.py"
        source.write_text("import triton\n")
        newest = ingest_paths(database, [source])
    finally:
        database.dispose()
    app = create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path), background=False)
    try:
        paths = warm_paths(app)
        assert paths and all(path.startswith(f"/runs/{run['run']}/c/") for path in paths)
        assert newest["run"] != run["run"]
    finally:
        app.state.db.dispose()


def test_an_empty_database_warms_nothing(tmp_path):
    app = create_app(Settings(db_url=fresh_db_url(tmp_path), load_demo=False, data_dir=tmp_path), background=False)
    try:
        assert warm_paths(app) == []
        assert _run(warm_up(app)) == 0
    finally:
        app.state.db.dispose()
