"""Two uvicorn workers on one database: start-up, concurrent ingests and reads (real server)."""

from __future__ import annotations

import gzip
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bench.server import serve
from tests.conftest import FIXTURES, fresh_db_url

LOG = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())


@pytest.fixture
def two_workers(tmp_path):
    with serve(fresh_db_url(tmp_path), tmp_path, workers=2, env={"IRLENS_LOAD_DEMO": "true"}) as server:
        yield server


def test_two_workers_ingest_and_serve_concurrently(two_workers):
    url, log_path = two_workers
    # Both workers started on an empty database: the demo was loaded exactly once.
    deadline = time.monotonic() + 60
    while not (runs := httpx.get(f"{url}/index.json").json()["runs"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [run["tags"] for run in runs] == [["demo"]]
    demo = runs[0]["url"]

    def upload(number: int) -> dict:
        response = httpx.post(f"{url}/runs", files={"file": (f"dump{number}.log", LOG)},
                              data={"title": f"concurrent {number}"}, timeout=120)
        assert response.status_code == 201, response.text
        return response.json()

    def read(_: int) -> int:
        return httpx.get(f"{url}{demo}.json", timeout=60).status_code

    with ThreadPoolExecutor(8) as pool:
        uploads = [pool.submit(upload, n) for n in range(4)]
        reads = [pool.submit(read, n) for n in range(16)]
        results = [future.result() for future in uploads]
        assert all(future.result() == 200 for future in reads)
    for run in results:
        (compilation,) = run["compilations"]
        assert compilation["snapshots"] == {"mlir": 76, "internal": 2, "llvm": 0}
        assert httpx.get(f"{url}{run['url']}.json").json()["run"] == run["run"]
    assert len(httpx.get(f"{url}/index.json").json()["runs"]) == 5
    assert "Traceback" not in log_path.read_text()
