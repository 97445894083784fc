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


def test_the_wait_is_capped_under_constant_load():
    results: list[float] = []
    started = threading.Event()
    with foreground.answering():
        thread = _background_waiter(results, started, max_wait=0.05)
        thread.join(10)
        assert not thread.is_alive() and len(results) == 1  # gave up waiting, still inside the request


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
