"""Browser-test fixtures: a real `irlens serve` in a subprocess, and Chromium pages driven by Playwright.

- `server_url`: base URL of a uvicorn server on a free port, with its own empty database (a SQLite
  file, or IRLENS_TEST_DB_URL when set). One per test session; needs no browser.
- `browser_page` (also as `page`): a fresh 1440x900 page in system Chromium; skips cleanly when
  Chromium or Playwright is missing. `page_errors` lists the page's uncaught JavaScript errors.
- `upload_via_api(server_url, path)`: ingest a file through POST /runs and return the run JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.server import serve
from tests.browser_support import chromium_available, chromium_path, launch_browser
from tests.conftest import fresh_db_url


@pytest.fixture(scope="session")
def server_url(tmp_path_factory) -> Iterator[str]:
    """A real uvicorn server (`irlens serve`) on a free port, with an empty database of its own."""
    data_dir = tmp_path_factory.mktemp("browser-server")
    with serve(fresh_db_url(data_dir), data_dir) as (url, _log):
        yield url


def upload_via_api(server_url: str, path: Path | str, title: str = "") -> dict:
    """Ingest one file (log, archive, ...) through POST /runs; returns the run JSON (201 asserted)."""
    path = Path(path)
    with open(path, "rb") as stream:
        response = httpx.post(
            f"{server_url}/runs",
            files={"file": (path.name, stream, "application/octet-stream")},
            data={"title": title} if title else None,
            headers={"Accept": "application/json"},
            timeout=600,
        )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture(scope="session")
def _browser():
    if not chromium_available():
        pytest.skip(f"Chromium ({chromium_path()}) or Playwright is not available")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        yield browser
        browser.close()


@pytest.fixture
def page_errors() -> list[str]:
    """Uncaught JavaScript errors of `browser_page`, for tests to assert there were none."""
    return []


@pytest.fixture
def browser_page(_browser, page_errors):
    context = _browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    yield page
    context.close()


@pytest.fixture
def page(browser_page):
    return browser_page
