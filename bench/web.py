"""Page figures over real HTTP against `irlens serve`: snapshot and diff latency (cold and warm),
cached-page throughput with 32 clients, and time until Chromium shows the largest snapshot."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench import server
from bench.inputs import REPO


@contextlib.contextmanager
def serve(db_path: Path) -> Iterator[str]:
    """`irlens serve` on the bench database, one worker (the default); yields its base URL."""
    with server.serve(f"sqlite:///{db_path}", db_path.parent) as (base, _log):
        yield base


@dataclass
class Sample:
    ttfb: float  # seconds until the response headers: the server's time, on localhost
    total: float  # until the last byte
    status: int
    size: int


def fetch(client, url: str) -> Sample:
    start = time.perf_counter()
    with client.stream("GET", url) as response:
        ttfb = time.perf_counter() - start
        size = sum(len(part) for part in response.iter_raw())
    return Sample(ttfb, time.perf_counter() - start, response.status_code, size)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = share * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Latency:
    label: str
    cold: list[Sample] = field(default_factory=list)
    warm: list[Sample] = field(default_factory=list)

    def summary(self) -> dict:
        def stats(samples: list[Sample]) -> dict:
            return {
                "n": len(samples),
                "ttfb_p50": percentile([s.ttfb for s in samples], 0.5),
                "ttfb_p95": percentile([s.ttfb for s in samples], 0.95),
                "total_p50": percentile([s.total for s in samples], 0.5),
                "total_p95": percentile([s.total for s in samples], 0.95),
                "bytes": statistics.median([s.size for s in samples]) if samples else 0,
                "errors": sum(1 for s in samples if s.status != 200),
            }

        return {"label": self.label, "cold": stats(self.cold), "warm": stats(self.warm)}


# -- what to request --------------------------------------------------------------------------------


@dataclass
class Targets:
    ten_k: list[str]  # snapshot page paths of distinct ~10,000-line blobs
    ten_k_lines: list[int]
    largest: str  # the corpus's largest snapshot
    largest_lines: int
    diffs: list[str]  # adjacent changed snapshot pairs, both ~10,000 lines
    diff_lines: list[tuple[int, int]]
    warmup: str  # a small snapshot page, to load templates and code before timing
    compares: list[str] = field(default_factory=list)  # /compare/A..B of two ~80-pass compilations of one kernel
    compare_passes: list[tuple[int, int]] = field(default_factory=list)
    compilations: list[str] = field(default_factory=list)  # ~80-pass compilation pages, none of them compared
    compilation_passes: list[int] = field(default_factory=list)


def pick_targets(db_path: Path, per_set: int = 8) -> Targets:
    with sqlite3.connect(db_path) as connection:
        rows = connection.execute(
            """select c.run_id, c.ordinal, s."index", s.line_count, s.blob_id, b.kind, s.compilation_pk
               from snapshots s join compilations c on c.pk = s.compilation_pk join banners b on b.pk = s.banner_pk
               order by s.line_count desc"""
        ).fetchall()

    def path(row) -> str:
        return f"/runs/{row[0]}/c/{row[1]}/s/{row[2]}"

    by_blob: dict[str, tuple] = {}
    for row in rows:
        by_blob.setdefault(row[4], row)
    distinct = list(by_blob.values())
    # The ~10,000-line set: distinct texts closest to 10,000 lines.
    near = sorted(distinct, key=lambda row: abs(row[3] - 10_000))[:per_set]
    largest = distinct[0]
    small = min((row for row in distinct if row[3] > 50), key=lambda row: row[3])
    # Adjacent pairs (index i, i+1 of one compilation) whose texts differ, closest to 10,000 lines.
    position = {(row[6], row[2]): row for row in rows}
    pairs = []
    for row in rows:
        after = position.get((row[6], row[2] + 1))
        if after is not None and after[4] != row[4]:
            pairs.append((row, after))
    pairs.sort(key=lambda pair: abs(min(pair[0][3], pair[1][3]) - 10_000))
    chosen, seen = [], set()
    for a, b in pairs:
        if (a[4], b[4]) in seen:
            continue
        seen.add((a[4], b[4]))
        chosen.append((a, b))
        if len(chosen) == per_set:
            break
    compares, compare_passes, compilations, compilation_passes = _compare_targets(db_path, per_set)
    return Targets(
        compares=compares,
        compare_passes=compare_passes,
        compilations=compilations,
        compilation_passes=compilation_passes,
        ten_k=[path(row) for row in near],
        ten_k_lines=[row[3] for row in near],
        largest=path(largest),
        largest_lines=largest[3],
        diffs=[f"/diff/{a[0]}-{a[1]}-{a[2]}..{b[0]}-{b[1]}-{b[2]}" for a, b in chosen],
        diff_lines=[(a[3], b[3]) for a, b in chosen],
        warmup=path(small),
    )


def _compare_targets(db_path: Path, per_set: int) -> tuple[list[str], list[tuple[int, int]], list[str], list[int]]:
    """Pairs of compilations of one kernel with about 80 passes each (no compilation in two pairs,
    so each page is cold), and as many other such compilations for the compilation-page baseline."""
    with sqlite3.connect(db_path) as connection:
        rows = connection.execute(
            """select c.run_id, c.ordinal, c.kernel, count(*) as passes
               from compilations c join snapshots s on s.compilation_pk = c.pk
               group by c.pk having passes between 60 and 100 order by abs(passes - 80), c.run_id, c.ordinal"""
        ).fetchall()
    by_kernel: dict[str, list[tuple]] = {}
    for row in rows:
        by_kernel.setdefault(row[2], []).append(row)
    used: set[tuple[str, int]] = set()
    pairs: list[tuple[tuple, tuple]] = []
    for members in sorted(by_kernel.values(), key=lambda group: abs(group[0][3] - 80)):
        while len(members) >= 2 and len(pairs) < per_set:
            a, b = members.pop(0), members.pop(0)
            pairs.append((a, b))
            used.update({(a[0], a[1]), (b[0], b[1])})
    singles = [row for row in rows if (row[0], row[1]) not in used][:per_set]
    return (
        [f"/compare/{a[0]}-{a[1]}..{b[0]}-{b[1]}" for a, b in pairs],
        [(a[3], b[3]) for a, b in pairs],
        [f"/runs/{row[0]}/c/{row[1]}" for row in singles],
        [row[3] for row in singles],
    )


# -- latency ----------------------------------------------------------------------------------------


def measure_latency(db_path: Path, targets: Targets, rounds: int = 3, warm_repeats: int = 10) -> list[dict]:
    """Cold: the first request for each page in a fresh server (after one small warm-up page).
    Warm: the same pages again, `warm_repeats` times each. `rounds` fresh servers. Cold pages also
    record the server's CPU time per request, which the shared machine's load moves far less than
    the wall time (as in measure_compare)."""
    import httpx

    sets = [
        Latency("snapshot ~10k lines"),
        Latency("snapshot largest"),
        Latency("diff adjacent ~10k lines"),
    ]
    urls = [targets.ten_k, [targets.largest], targets.diffs]
    cpu: list[list[float]] = [[] for _ in sets]
    for _ in range(rounds):
        with serve(db_path) as base, httpx.Client(base_url=base, timeout=120) as client:
            pid = _server_pid()
            fetch(client, targets.warmup)
            fetch(client, f"{targets.warmup}/raw")
            _cold_then_warm(client, pid, sets, urls, cpu,
                            lambda latency: warm_repeats * (2 if latency.label == "snapshot largest" else 1))
    return _summaries(sets, cpu)


def _cold_then_warm(client, pid, sets, urls, cpu, warm_rounds) -> None:
    """Each page once cold (with the server's CPU time for it), then warm `warm_rounds(latency)` times."""
    for latency, paths, spent in zip(sets, urls, cpu):
        for path in paths:
            before = _cpu_seconds(pid)
            latency.cold.append(fetch(client, path))
            after = _cpu_seconds(pid)
            if before is not None and after is not None:
                spent.append(after - before)
    for latency, paths in zip(sets, urls):
        for _ in range(warm_rounds(latency)):
            for path in paths:
                latency.warm.append(fetch(client, path))


def _summaries(sets, cpu) -> list[dict]:
    summaries = [latency.summary() for latency in sets]
    for summary, spent in zip(summaries, cpu):
        if spent:
            summary["cold"]["cpu_p50"] = percentile(spent, 0.5)
            summary["cold"]["cpu_p95"] = percentile(spent, 0.95)
    return summaries


def _server_pid() -> int | None:
    """The `irlens serve` this process started (its only child while a bench server runs), on Linux."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            return int(stat.parent.name)
    return None


def _cpu_seconds(pid: int | None) -> float | None:
    """CPU time of all the process's threads (schedstat: nanoseconds on a CPU), or None off Linux."""
    if pid is None:
        return None
    total = 0
    for path in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def measure_compare(db_path: Path, targets: Targets, rounds: int = 3, warm_repeats: int = 10) -> list[dict]:
    """The compare page of two ~80-pass compilations, cold and warm, beside the baseline it is read
    against: a compilation page of ~80 passes (one side's pass list and op counts), in the same
    fresh servers. No compilation appears in two of these pages, so each first request is cold.
    Cold pages also record the server's CPU time per request: on the shared 2-core machine the
    wall time swings with other people's load, the CPU time much less."""
    import httpx

    sets = [Latency("compilation page ~80 passes"), Latency("compare ~80 passes")]
    cpu: list[list[float]] = [[], []]
    urls = [targets.compilations, targets.compares]
    for _ in range(rounds):
        with serve(db_path) as base, httpx.Client(base_url=base, timeout=120) as client:
            pid = _server_pid()
            fetch(client, targets.warmup)
            _cold_then_warm(client, pid, sets, urls, cpu, lambda latency: warm_repeats)
    return _summaries(sets, cpu)


# -- throughput -------------------------------------------------------------------------------------


def measure_throughput(db_path: Path, path: str, clients: int = 32, seconds: int = 10,
                       revalidate: bool = False) -> dict:
    """Requests per second for one cached page with `clients` concurrent connections, as a browser asks
    (Accept-Encoding: gzip; with `revalidate`, If-None-Match with the page's ETag, as a browser's
    reload does). wrk if installed, else httpx's async client."""
    import httpx

    headers = {"Accept-Encoding": "gzip"}
    with serve(db_path) as base:
        with httpx.Client(base_url=base, timeout=120) as client:
            for _ in range(3):
                fetch(client, path)  # rendered and cached before the clock starts
            if revalidate:
                etag = client.get(path).headers.get("etag")
                if etag:
                    headers["If-None-Match"] = etag
        if shutil.which("wrk"):
            flags = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
            result = subprocess.run(
                ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "--latency", *flags, f"{base}{path}"],
                capture_output=True, text=True, check=False,
            )
            return {"tool": "wrk", **_parse_wrk(result.stdout), "raw": result.stdout}
        return _httpx_load(base, path, clients, seconds, headers)


def _parse_wrk(text: str) -> dict:
    def number(pattern: str, default: float = 0.0) -> float:
        match = re.search(pattern, text)
        return float(match.group(1)) if match else default

    errors = 0
    match = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if match:
        errors += sum(int(group) for group in match.groups())
    errors += int(number(r"Non-2xx or 3xx responses: (\d+)"))

    def ms(pattern: str) -> float:
        match = re.search(pattern, text)
        if not match:
            return float("nan")
        value, unit = float(match.group(1)), match.group(2)
        return value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    return {
        "rps": number(r"Requests/sec:\s+([\d.]+)"),
        "requests": int(number(r"(\d+) requests in")),
        "errors": errors,
        "p50_ms": ms(r"50%\s+([\d.]+)(us|ms|s)"),
        "p99_ms": ms(r"99%\s+([\d.]+)(us|ms|s)"),
    }


def _httpx_load(base: str, path: str, clients: int, seconds: int, headers: dict) -> dict:
    import asyncio

    import httpx

    async def run() -> dict:
        done = errors = 0
        stop = time.perf_counter() + seconds
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_connections=clients)) as client:

            async def worker() -> None:
                nonlocal done, errors
                while time.perf_counter() < stop:
                    try:
                        response = await client.get(path, headers=headers)
                        if response.status_code not in (200, 304):
                            errors += 1
                    except httpx.HTTPError:
                        errors += 1
                    done += 1

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(clients)))
            elapsed = time.perf_counter() - start
        return {"tool": "httpx", "rps": done / elapsed, "requests": done, "errors": errors}

    return asyncio.run(run())


# -- browser ----------------------------------------------------------------------------------------

_READY_JS = """() => {
  const first = document.querySelector('#ir [id^="L"]');
  if (!first) return null;
  const r = first.getBoundingClientRect();
  return r.height > 0 && r.top < window.innerHeight ? true : null;
}"""

_SCROLL_JS = """async () => {
  // The IR scrolls inside its pane (or, failing that, the page): scroll it to 60% and check that the
  // line now in the middle of the pane is painted.
  const ir = document.getElementById('ir');
  let box = ir;
  while (box && box !== document.body && !(box.scrollHeight > box.clientHeight + 1 &&
         /(auto|scroll)/.test(getComputedStyle(box).overflowY))) box = box.parentElement;
  if (!box || box === document.body) box = document.scrollingElement;
  box.scrollTop = box.scrollHeight * 0.6;
  const rect = box === document.scrollingElement
    ? {left: 0, top: 0, width: window.innerWidth, height: window.innerHeight} : box.getBoundingClientRect();
  let line = null, frames = 0;
  while (frames < 600) {  // up to ~10 s of frames until the line in the middle is painted
    await new Promise(r => requestAnimationFrame(r));
    frames++;
    const hit = document.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height / 2);
    line = hit && hit.closest('#ir [id^="L"]');
    if (line && line.getBoundingClientRect().height > 0) break;
    line = null;
  }
  return {container: box.id || box.tagName, scrolled: Math.round(box.scrollTop), height: box.scrollHeight,
          line: line ? line.id : null, frames: frames};
}"""

_PAINT_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {response_end: nav.responseEnd, dom_content_loaded: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd, fcp: fcp ? fcp.startTime : null};
}"""


def measure_browser(db_path: Path, path: str, repeats: int = 3, first_visits: int = 5) -> dict:
    """Seconds from navigation start until the largest snapshot's first lines are on screen, and until
    a scroll to 60% of the page lands on a painted IR line. First visits: each in a fresh server, which
    renders the page cold; one sample moves by ±0.1 s between runs, so `first_visits` of them are
    taken and the median counts. Later visits (`repeats`, in the first server): cached in the server.
    Every visit is in a fresh browser context (no browser cache)."""
    sys.path.insert(0, str(REPO))
    from tests.browser_support import chromium_available, launch_browser

    if not chromium_available():
        return {"skipped": "Chromium or Playwright not available"}
    from playwright.sync_api import sync_playwright

    def one_visit(browser, base: str, cold: bool) -> dict:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        start = time.perf_counter()
        page.goto(base + path, wait_until="commit", timeout=120_000)
        page.wait_for_function(_READY_JS, timeout=120_000, polling="raf")
        visible = time.perf_counter() - start
        # Scrollable: every line is in the document (DOMContentLoaded), and a scroll to 60% of
        # the IR lands on a painted line.
        page.wait_for_load_state("domcontentloaded", timeout=120_000)
        scroll = page.evaluate(_SCROLL_JS)
        scrollable = time.perf_counter() - start
        page.wait_for_load_state("load")
        timings = page.evaluate(_PAINT_JS)
        context.close()
        return {"cold": cold, "visible_s": visible, "scrollable_s": scrollable, "scroll": scroll, **timings}

    visits = []
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            for server_round in range(first_visits):
                with serve(db_path) as base:
                    visits.append(one_visit(browser, base, cold=True))
                    for _ in range(repeats if server_round == 0 else 0):
                        visits.append(one_visit(browser, base, cold=False))
        finally:
            browser.close()
    warm = [visit for visit in visits if not visit["cold"]]
    cold = [visit["scrollable_s"] for visit in visits if visit["cold"]]
    return {
        "visits": visits,
        "cold_scrollable_s": statistics.median(cold),
        "cold_scrollable_range_s": [min(cold), max(cold)],
        "first_visits": len(cold),
        "warm_visible_p50_s": statistics.median(v["visible_s"] for v in warm),
        "warm_scrollable_p50_s": statistics.median(v["scrollable_s"] for v in warm),
    }
