"""First visits in Chromium to every page type, on the largest real captures (issue 32, item 3).

`python -m bench --only visits`. The database: the corpus's largest capture (gpu_inductor) and the
real GPU autotune capture when present (bench/inputs.py `gpu_captures`), each stored by the default
`irlens ingest`. The pages: the run with the most snapshots, its compilation with the most, that
compilation's largest snapshot, the diff of it against the previous different text, the map, the op
history, the compare of two compilations of one kernel in one run (autotune configs), and the layout
inspector, and the history of the kernel with the most points: before the captures, the database gets
HISTORY_RUNS runs of 20 kernels as bench/kernel_history.py builds them (rows, no texts), so that page
draws a team-sized series.

Each round: a fresh server, warmed by a visit to the home page (so the first page measured does not
pay for the server's own first request), then every page once: each page's data is cold, each visit
in a fresh browser context (no cache). Until a
usable paint: navigation start to the first frame painted after DOMContentLoaded (the whole
document parsed, its deferred scripts run, so the page answers input), two requestAnimationFrame
callbacks after it. Also recorded: the server's time (requestStart to responseStart of the
document), the bytes and requests of the visit (Resource Timing: transfer sizes, compressed), the
first contentful paint, and Chromium's own counters for the visit (CDP Performance.getMetrics:
script, style, layout and task time): where the browser time goes.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
from pathlib import Path

from bench import inputs, server
from bench.ingest import fresh_db, ingest
from bench.inputs import REPO

TARGET_S = 1.0
_USABLE_JS = """() => new Promise(resolve => {
  const done = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const resources = performance.getEntriesByType('resource');
    resolve({usable_ms: performance.now(), server_ms: nav.responseStart - nav.requestStart,
             dcl_ms: nav.domContentLoadedEventEnd, fcp_ms: fcp ? fcp.startTime : null,
             document_bytes: nav.transferSize, document_decoded_bytes: nav.decodedBodySize,
             bytes: nav.transferSize + resources.reduce((sum, r) => sum + r.transferSize, 0),
             requests: 1 + resources.length, dom_elements: document.getElementsByTagName('*').length});
  }));
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', done); else done();
})"""
_METRICS = ("TaskDuration", "ScriptDuration", "RecalcStyleDuration", "LayoutDuration", "Nodes")
HISTORY_RUNS = 2_000


def build_db(workdir: Path) -> Path:
    from app.store.db import Database
    from bench.kernel_history import build

    db = fresh_db(workdir / "visits.db")
    database = Database(f"sqlite:///{db}")  # the schema, migrated
    build(database, runs=HISTORY_RUNS, kernels=20)  # first: its compilation pks start at 1
    database.dispose()
    archive = inputs.CORPUS / "gpu_inductor.tar.xz"
    ingest([archive], db, ["--quiet"])
    for folder in inputs.gpu_captures()[0]:
        ingest([folder / "dump.log", *([folder / "cache"] if (folder / "cache").is_dir() else [])], db, ["--quiet"])
    return db


def pick_pages(db: Path) -> dict[str, str]:
    """Page type -> URL path, chosen from the database as the docstring says."""
    from app.urls import Urls, compilation_id, snapshot_id

    urls = Urls("")
    with sqlite3.connect(db) as connection:
        run_id, = connection.execute(
            "SELECT c.run_id FROM snapshots s JOIN compilations c ON c.pk = s.compilation_pk "
            "GROUP BY c.run_id ORDER BY count(*) DESC LIMIT 1").fetchone()
        pk, ordinal = connection.execute(
            "SELECT c.pk, c.ordinal FROM snapshots s JOIN compilations c ON c.pk = s.compilation_pk "
            "WHERE c.run_id = ? GROUP BY c.pk ORDER BY count(*) DESC LIMIT 1", (run_id,)).fetchone()
        snapshots = connection.execute(
            'SELECT s."index", s.blob_id, b.size FROM snapshots s JOIN blobs b ON b.id = s.blob_id '
            'WHERE s.compilation_pk = ? ORDER BY s."index"', (pk,)).fetchall()
        # compare: two compilations of one kernel in one run (autotune configs), the most snapshots first
        pair = connection.execute(
            "SELECT c.run_id, min(c.ordinal), max(c.ordinal) FROM compilations c JOIN snapshots s "
            "ON s.compilation_pk = c.pk WHERE c.kernel IS NOT NULL GROUP BY c.run_id, c.kernel "
            "HAVING count(DISTINCT c.pk) > 1 ORDER BY count(*) DESC LIMIT 1").fetchone()
        kernel, = connection.execute(
            "SELECT kernel FROM kernel_points GROUP BY kernel ORDER BY count(*) DESC, kernel LIMIT 1").fetchone()
    largest = max(range(len(snapshots)), key=lambda i: snapshots[i][2])
    previous = next((i for i in range(largest - 1, -1, -1) if snapshots[i][1] != snapshots[largest][1]), None)
    index = snapshots[largest][0]
    pages = {
        "run": urls.run(run_id),
        "compilation": urls.compilation(run_id, ordinal),
        "snapshot": urls.snapshot(run_id, ordinal, index),
        "map": urls.source_map(run_id, ordinal),
        "op history": urls.op_history(run_id, ordinal),
        "inspector": urls.layout(
            "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>",
            "128x128"),
        "kernel history": urls.kernel(kernel),
    }
    if previous is not None:
        pages["diff"] = urls.diff(snapshot_id(run_id, ordinal, snapshots[previous][0]), snapshot_id(run_id, ordinal, index))
    if pair is not None:
        pages["compare"] = urls.compare(compilation_id(pair[0], pair[1]), compilation_id(pair[0], pair[2]))
    return pages


def measure_visits(workdir: Path, visits: int = 3) -> dict:
    sys.path.insert(0, str(REPO))
    from tests.browser_support import chromium_available, launch_browser

    if not chromium_available():
        return {"skipped": "Chromium or Playwright not available"}
    from playwright.sync_api import sync_playwright

    db = build_db(workdir)
    pages = pick_pages(db)
    samples: dict[str, list[dict]] = {name: [] for name in pages}
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            for _ in range(visits):  # each round: one fresh server, every page cold once
                with server.serve(f"sqlite:///{db}", db.parent) as (base, _log):
                    _visit(browser, base + "/")  # the server's code warmed on another page: each page's data is cold
                    for name, path in pages.items():
                        print(f"bench: first visit: {name} ...", file=sys.stderr, flush=True)
                        samples[name].append(_visit(browser, base + path))
            slowest = max(pages, key=lambda name: statistics.median(
                [run["usable_ms"] for run in samples[name] if "error" not in run] or [0]))
            with server.serve(f"sqlite:///{db}", db.parent) as (base, _log):  # where its browser time goes
                _visit(browser, base + "/")
                try:
                    profile = {"page": slowest, **_profile(browser, base + pages[slowest])}
                except Exception as error:  # noqa: BLE001 - the visits above are kept
                    profile = {"page": slowest, "error": f"{type(error).__name__}: {str(error)[:200]}"}
        finally:
            browser.close()
    out = {"pages": {}, "urls": pages, "history_runs": HISTORY_RUNS, "profile": profile}
    for name, runs in samples.items():
        ok = [run for run in runs if "error" not in run]
        if not ok:
            out["pages"][name] = {"error": runs[-1]["error"]}
            continue
        median = {key: statistics.median(run[key] for run in ok if run.get(key) is not None)
                  for key in ok[0] if isinstance(ok[0][key], (int, float)) and ok[0][key] is not None}
        median["usable_range_ms"] = [min(run["usable_ms"] for run in ok), max(run["usable_ms"] for run in ok)]
        median["usable_all_ms"] = [round(run["usable_ms"]) for run in ok]  # round by round
        median["server_all_ms"] = [round(run["server_ms"]) for run in ok]
        median["status"] = ok[0]["status"]
        median["visits"] = len(ok)
        out["pages"][name] = median
    return out


def _visit(browser, url: str) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    try:
        response = page.goto(url, wait_until="commit", timeout=120_000)
        result = page.evaluate(_USABLE_JS)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        result.update({f"cdp_{name}": metrics.get(name) for name in _METRICS})
        result["status"] = response.status if response else None
        return result
    except Exception as error:  # noqa: BLE001 - one page's failure is reported, the others measured
        return {"error": f"{type(error).__name__}: {str(error)[:200]}"}
    finally:
        context.close()


_TRACED = ("ParseHTML", "ParseAuthorStyleSheet", "EvaluateScript", "v8.compile", "v8.compileModule", "FunctionCall",
           "RunMicrotasks", "TimerFire", "EventDispatch", "UpdateLayoutTree", "Layout", "PrePaint", "Paint",
           "Layerize", "HitTest")


def _profile(browser, url: str) -> dict:
    """One first visit under Chromium's tracing: the renderer main thread's busy time (its RunTask
    events) and, inclusive (nested events count in their parents too), the time of each kind of work."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    browser.start_tracing(page=page, categories=["devtools.timeline", "v8.execute",
                                                 "disabled-by-default-devtools.timeline"])  # RunTask
    try:
        page.goto(url, wait_until="commit", timeout=120_000)
        usable = page.evaluate(_USABLE_JS)["usable_ms"]
    finally:
        trace = json.loads(browser.stop_tracing())
        context.close()
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    renderers = {(e["pid"], e["tid"]) for e in events
                 if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"}
    busy: dict[tuple, float] = {}
    by_kind: dict[tuple, dict[str, float]] = {}
    for event in events:
        thread = (event.get("pid"), event.get("tid"))
        if thread not in renderers or event.get("ph") != "X":
            continue
        if event.get("name") == "RunTask":
            busy[thread] = busy.get(thread, 0.0) + event.get("dur", 0) / 1000
        elif event.get("name") in _TRACED:
            kinds = by_kind.setdefault(thread, {})
            kinds[event["name"]] = kinds.get(event["name"], 0.0) + event.get("dur", 0) / 1000
    main = max(busy, key=busy.get) if busy else None  # the page's renderer: the busiest
    kinds = sorted((by_kind.get(main) or {}).items(), key=lambda item: -item[1])
    return {"usable_ms": usable, "main_thread_ms": round(busy.get(main, 0.0), 1),
            "inclusive_ms": {name: round(ms, 1) for name, ms in kinds}}


def table_rows(result: dict | None) -> list[tuple[str, str, str, str]]:
    if not result:
        return []
    if "skipped" in result:
        return [("browser first visits per page type", result["skipped"], "", "")]
    rows = []
    for name, page in result["pages"].items():
        if "error" in page:
            rows.append((f"first visit, {name} page", f"failed: {page['error']}", "", f"≤ {TARGET_S:g} s"))
            continue
        low, high = page["usable_range_ms"]
        rows.append((
            (f"first visit, {name} page (cold server, no browser cache), median of {page['visits']}: usable paint "
            f"({low / 1000:.2f}-{high / 1000:.2f} s); server; FCP; bytes, requests; DOM elements; "
            "Chromium task / script / style / layout"),
            (f"{page['usable_ms'] / 1000:.2f} s; {page['server_ms']:.0f} ms; {(page.get('fcp_ms') or 0):.0f} ms; "
             f"{page['bytes'] / 1000:.0f} KB ({page['document_decoded_bytes'] / 1000:.0f} KB HTML decoded), "
             f"{page['requests']:.0f}; {page['dom_elements']:.0f}; "
             f"{page['cdp_TaskDuration'] * 1000:.0f} / {page['cdp_ScriptDuration'] * 1000:.0f} / "
             f"{page['cdp_RecalcStyleDuration'] * 1000:.0f} / {page['cdp_LayoutDuration'] * 1000:.0f} ms"),
            "", f"≤ {TARGET_S:g} s",
        ))
    profile = result.get("profile")
    if profile and "error" in profile:
        rows.append((f"traced first visit of the slowest page ({profile['page']})", f"failed: {profile['error']}", "", ""))
    elif profile:
        rows.append((
            (f"where the browser's time goes: one traced first visit of the slowest page ({profile['page']}); "
             "renderer main thread busy; inclusive time per kind of work"),
            (f"{profile['usable_ms'] / 1000:.2f} s usable; {profile['main_thread_ms']:.0f} ms busy; "
             + ", ".join(f"{name} {ms:.0f} ms" for name, ms in list(profile["inclusive_ms"].items())[:8])),
            "", "",
        ))
    return rows


if __name__ == "__main__":
    import tempfile

    print(json.dumps(measure_visits(Path(tempfile.mkdtemp(prefix="irlens-bench-visits-"))), indent=1))
