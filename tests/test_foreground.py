"""Background rounds give way to page reads (app/foreground.py, app/web/in_flight.py)."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from app import foreground
from app.settings import Settings
from app.web.app import create_app


@pytest.fixture(autouse=True)
def short_quiet(monkeypatch):
    monkeypatch.setattr(foreground, "QUIET_SECONDS", 0.01)


def _background_waiter(results: list[float], started: threading.Event, max_wait: float = 60.0) -> threading.Thread:
    def work() -> None:
        with foreground.background():
            started.set()
            results.append(foreground.give_way(max_wait))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_a_request_thread_never_waits():
    with foreground.answering():
        assert foreground.give_way(max_wait=60) == 0.0


def test_background_work_waits_for_the_request_in_flight_then_goes_on():
    results: list[float] = []
    started = threading.Event()
    with foreground.answering():
        thread = _background_waiter(results, started)
        assert started.wait(10)
        thread.join(0.3)
        assert thread.is_alive() and not results  # still waiting: the request is in flight
    thread.join(10)
    assert not thread.is_alive() and len(results) == 1


def test_the_wait_is_capped_under_constant_load_and_then_the_background_gets_its_turn(monkeypatch):
    monkeypatch.setattr(foreground, "FREE_RUN_SECONDS", 600.0)
    results: list[float] = []
    started = threading.Event()

    def work() -> None:
        with foreground.background():
            started.set()
            results.append(foreground.give_way(0.05))  # gives up waiting: the request never ends
            results.append(foreground.give_way(60))  # then runs on without waiting, for a while

    with foreground.answering():
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        thread.join(30)
        assert not thread.is_alive() and len(results) == 2 and results[0] > 0 and results[1] == 0.0


def test_the_middleware_counts_page_reads_but_not_uploads(tmp_path, monkeypatch):
    seen: list[int] = []
    real = foreground.answering

    def counting():
        seen.append(1)
        return real()

    monkeypatch.setattr(foreground, "answering", counting)
    app = create_app(Settings(data_dir=tmp_path, load_demo=False), background=False)
    with TestClient(app) as client:
        assert client.get("/index.json").status_code == 200
        assert len(seen) == 1
        client.post("/runs", files={"files": ("x.log", b"no IR here\n")})
        assert len(seen) == 1
    assert foreground._in_flight == 0


def test_background_work_holds_no_write_lock_when_it_gives_way(tmp_path, monkeypatch):
    """A map visit stores the indexes it computes: had the background round waited for that visit
    while holding SQLite's write lock, the visit would have waited for the round (a deadlock broken
    only by the 5 s cap, once per text). At every give_way of a whole preparation, another connection
    can take the write lock at once."""
    import sqlite3

    from app.insight import precompute
    from app.store.db import Database
    from tests.conftest import FIXTURES, ingest_paths

    path = tmp_path / "irlens.db"
    database = Database(f"sqlite:///{path}")
    locked: list[str] = []
    calls: list[int] = []
    real = foreground.give_way

    this_thread = threading.current_thread()

    def checking(max_wait: float = foreground.MAX_WAIT_SECONDS) -> float:
        if threading.current_thread() is not this_thread:  # another test's server winding down
            return real(max_wait)
        calls.append(1)
        other = sqlite3.connect(path, timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
        except sqlite3.OperationalError as error:
            locked.append(str(error))
        finally:
            other.close()
        return real(max_wait)

    monkeypatch.setattr(foreground, "give_way", checking)
    stop = threading.Event()
    # what a server still winding down does in a whole test run: give_way calls from other threads
    def other_server() -> None:
        while not stop.wait(0.001):
            foreground.give_way(0)

    other_thread = threading.Thread(target=other_server, daemon=True)
    other_thread.start()
    try:
        ingest_paths(database, [FIXTURES / "recompile_add_kernel_triton39.log.gz",
                                FIXTURES / "sm90_add_kernel_dump.log.gz"])
        with foreground.background():
            assert precompute.prepare_pending(database) >= 1
    finally:
        stop.set()
        other_thread.join(10)
        database.dispose()
    assert len(calls) > 10 and locked == []
