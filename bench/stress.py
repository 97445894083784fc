"""Concurrent uploads and readers against a real `irlens serve` on loopback.

    .venv/bin/python -m bench.stress [--db URL] [--uploads 20] [--readers 50] [--seconds S] [--workers N]

`--uploads` clients upload at once, each a distinct capture (the real sm90 fixture log with its kernel
renamed per upload, `@add_kernel` -> `@add_kernel_u3r0`, so deduplication cannot hide a lost one), again
and again until `--seconds` have passed; `--readers` clients meanwhile read pages (home, run, compilation,
snapshot, diff, search, and runs picked from the home page as they appear). Then every stored upload is
compared with a solo ingest of the same bytes (its run JSON and compilation JSON), and the server log is
searched for "database is locked" and tracebacks. Prints a table; exits 1 on any error, 5xx or loss.
Default database: a new SQLite file in a temp dir.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.inputs import REPO
from bench.server import serve

FIXTURE = REPO / "tests" / "fixtures" / "sm90_add_kernel_dump.log.gz"
LOCKED = "database is locked"


def upload_bytes(tag: str) -> bytes:
    """The real fixture log, its kernel renamed: `@add_kernel` -> `@add_kernel_<tag>`."""
    return _fixture().replace(b"@add_kernel", f"@add_kernel_{tag}".encode())


_FIXTURE_CACHE: list[bytes] = []


def _fixture() -> bytes:
    if not _FIXTURE_CACHE:
        _FIXTURE_CACHE.append(gzip.decompress(FIXTURE.read_bytes()))
    return _FIXTURE_CACHE[0]


# -- what a stored upload must look like --------------------------------------------------------------


def normal(data: dict, run_id: str) -> str:
    """A page's JSON without what differs between two ingests of the same bytes: the run id, creation
    time, storage counters (what was new depends on what was stored before) and log rows' database keys."""
    data = {key: value for key, value in data.items() if key not in ("created_at", "stats")}
    if "logs" in data:
        data["logs"] = [{k: v for k, v in log.items() if k not in ("id", "url")} for log in data["logs"]]
    return json.dumps(data, sort_keys=True).replace(run_id, "RUN")


def solo_pages(uploads: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """tag -> (run JSON, compilation JSON), normalised, from ingesting each upload alone, one after
    another, through the same app in-process, on a scratch SQLite database."""
    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app

    pages = {}
    with tempfile.TemporaryDirectory(prefix="irlens-solo-") as scratch:
        settings = Settings(data_dir=Path(scratch), load_demo=False)
        with TestClient(create_app(settings)) as client:
            for tag, title in uploads:
                made = client.post("/runs", files={"file": (f"{tag}.log", upload_bytes(tag))},
                                   data={"title": title}, headers={"Accept": "application/json"})
                made.raise_for_status()
                run = made.json()
                pages[tag] = _pages(client.get(f"{run['url']}.json").json(),
                                    client.get(f"{run['url']}/c/1.json").json(), run["run"])
    return pages


def _pages(run: dict, compilation: dict, run_id: str) -> tuple[str, str]:
    return normal(run, run_id), normal(compilation, run_id)


# -- the load -------------------------------------------------------------------------------------------


@dataclass
class Kind:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # transport errors and unexpected statuses
    server_errors: int = 0  # 5xx
    # GETs sent again once after the server closed an idle keep-alive connection as they reused it
    # (uvicorn closes one after 5 s idle; a browser resends an idempotent request the same way)
    resent: int = 0

    def percentile(self, share: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


@dataclass
class Result:
    kinds: dict[str, Kind]
    uploads: dict[str, dict]  # tag -> the server's 201 answer
    lost: list[str]  # tags answered 201 whose stored run differs from the solo ingest (failed uploads: errors)
    partial_seen: list[str]  # runs a reader saw without their compilations
    locked: int  # "database is locked" in answers or the server log
    tracebacks: int
    seconds: float

    @property
    def ok(self) -> bool:
        return (not self.lost and not self.partial_seen and not self.locked and not self.tracebacks
                and all(not kind.errors and not kind.server_errors for kind in self.kinds.values()))

    def table(self) -> str:
        lines = [f"{'kind':<8} {'requests':>8} {'errors':>6} {'5xx':>4} {'resent':>6} {'p50 ms':>8} {'p99 ms':>8}"]
        for name, kind in self.kinds.items():
            lines.append(f"{name:<8} {len(kind.latencies):>8} {len(kind.errors):>6} {kind.server_errors:>4} "
                         f"{kind.resent:>6} {kind.percentile(0.5):>8.1f} {kind.percentile(0.99):>8.1f}")
        lines.append(f"uploads stored {len(self.uploads)}, data lost = {len(self.lost)}, partial runs seen = "
                     f"{len(self.partial_seen)}, '{LOCKED}' = {self.locked}, tracebacks = {self.tracebacks}, "
                     f"{self.seconds:.1f} s")
        return "\n".join(lines)


async def _load(url: str, uploads: int, readers: int, seconds: float) -> tuple[dict[str, Kind], dict, list, int]:
    kinds = {"upload": Kind(), "read": Kind()}
    stored: dict[str, dict] = {}
    partial: list[str] = []
    locked = 0
    limits = httpx.Limits(max_connections=uploads + readers + 4, max_keepalive_connections=uploads + readers + 4)
    options = {"base_url": url, "timeout": 600, "limits": limits, "headers": {"Accept": "application/json"}}
    # Two clients: readers collect the cookies pages set (as a browser would); uploaders stay API
    # clients without cookies (a cookie would make the server ask for the form's CSRF token).
    async with httpx.AsyncClient(**options) as client, httpx.AsyncClient(**options) as api:
        seed = (await api.post("/runs", files={"file": ("seed.log", upload_bytes("seed"))})).json()
        compilation = (await client.get(f"{seed['url']}/c/1.json")).json()
        snapshots = compilation["snapshots"]
        pages = ["/", "/index.json", seed["url"], f"{seed['url']}.json", seed["compilations"][0]["url"],
                 snapshots[0]["url"], f"{snapshots[len(snapshots) // 2]['url']}.json",
                 snapshots[len(snapshots) // 2]["diff_prev_url"], "/search.json?q=add_kernel", "/runs/nosuchrun"]
        start = time.monotonic()
        uploading = uploads

        async def request(kind: str, method: str, path: str, **options) -> httpx.Response | None:
            nonlocal locked
            began = time.monotonic()
            sender = api if kind == "upload" else client
            try:
                try:
                    response = await sender.request(method, path, **options)
                except (httpx.ReadError, httpx.RemoteProtocolError):
                    if method != "GET":
                        raise
                    kinds[kind].resent += 1
                    response = await sender.request(method, path, **options)
            except httpx.HTTPError as error:
                kinds[kind].errors.append(f"{method} {path}: {type(error).__name__} {error}")
                return None
            kinds[kind].latencies.append(time.monotonic() - began)
            if response.status_code >= 500:
                kinds[kind].server_errors += 1
            if LOCKED in response.text:
                locked += 1
            return response

        async def uploader(number: int) -> None:
            nonlocal uploading
            round_ = 0
            try:
                while round_ == 0 or time.monotonic() - start < seconds:
                    tag = f"u{number}r{round_}"
                    round_ += 1
                    response = await request("upload", "POST", "/runs", data={"title": f"stress {tag}"},
                                             files={"file": (f"{tag}.log", upload_bytes(tag))})
                    if response is None:
                        continue
                    if response.status_code == 201:
                        stored[tag] = response.json()
                    elif response.status_code < 500:
                        kinds["upload"].errors.append(f"upload {tag}: {response.status_code} {response.text[:200]}")
            finally:
                uploading -= 1

        async def reader(number: int) -> None:
            rng = random.Random(number)
            while uploading or time.monotonic() - start < seconds:
                if rng.random() < 0.25:  # a run from the home page, maybe one committed a moment ago
                    home = await request("read", "GET", "/index.json")
                    if home is None or home.status_code != 200:
                        continue
                    runs = home.json()["runs"]
                    run = rng.choice(runs)
                    page = await request("read", "GET", f"{run['url']}.json")
                    if page is not None and page.status_code == 200 and not page.json()["compilations"]:
                        partial.append(run["run"])
                else:
                    path = rng.choice(pages)
                    response = await request("read", "GET", path)
                    expected = 404 if path == "/runs/nosuchrun" else 200
                    if response is not None and response.status_code != expected and response.status_code < 500:
                        kinds["read"].errors.append(f"GET {path}: {response.status_code}")

        await asyncio.gather(*(uploader(n) for n in range(uploads)), *(reader(n) for n in range(readers)))
    return kinds, stored, partial, locked


def _stored_pages(url: str, stored: dict[str, dict]) -> dict[str, tuple[str, str]]:
    pages = {}
    with httpx.Client(base_url=url, timeout=120) as client:
        for tag, answer in stored.items():
            run_url = answer["url"]
            pages[tag] = _pages(client.get(f"{run_url}.json").json(), client.get(f"{run_url}/c/1.json").json(),
                                answer["run"])
    return pages


def stress(url: str, log_path: Path, uploads: int = 20, readers: int = 50, seconds: float = 5.0) -> Result:
    """Run the load against a server already serving at `url`, then check every upload against a solo
    ingest of the same bytes."""
    began = time.monotonic()
    # A thread of its own: the caller may already run an event loop (pytest with Playwright's sync API).
    with ThreadPoolExecutor(1) as thread:
        kinds, stored, partial, locked = thread.submit(asyncio.run, _load(url, uploads, readers, seconds)).result()
    took = time.monotonic() - began
    expected = solo_pages([(tag, f"stress {tag}") for tag in stored])
    actual = _stored_pages(url, stored)
    lost = sorted(tag for tag in stored if actual.get(tag) != expected.get(tag))
    log = log_path.read_text(errors="replace")
    return Result(kinds, stored, lost, partial, locked + log.count(LOCKED), log.count("Traceback"), took)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stress", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="database URL (default: a new SQLite file in a temp dir)")
    parser.add_argument("--uploads", type=int, default=20, help="concurrent uploading clients")
    parser.add_argument("--readers", type=int, default=50, help="concurrent reading clients")
    parser.add_argument("--seconds", type=float, default=10.0, help="keep uploading and reading this long")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="irlens-stress-") as scratch:
        data_dir = Path(scratch)
        db_url = args.db or f"sqlite:///{data_dir / 'irlens.db'}"
        with serve(db_url, data_dir, workers=args.workers) as (url, log_path):
            result = stress(url, log_path, args.uploads, args.readers, args.seconds)
        print(f"{args.uploads} uploaders + {args.readers} readers, {args.workers} worker(s), "
              f"{db_url.split(':', 1)[0]}:")
        print(result.table())
        for kind in result.kinds.values():
            for error in kind.errors[:5]:
                print(f"  error: {error}")
        if result.lost:
            print(f"  lost: {result.lost[:5]}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

