"""The layout inspector (/-/layout) in Chromium: how soon a 128x128 layout's grid is on screen, how
big the page is, and what the server spends on it cold and warm (page cache). The inspector needs
no run, so this stage starts its own server on an empty database; it needs no corpus.

`python -m bench --only inspector` (or `python -m bench.inspector` for just these figures as JSON).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from bench import server
from bench.inputs import REPO

# Layouts as real sm90 captures (corpus sm90_mix) write them, at the 128x128 tile they use.
LAYOUTS = {
    "mma v3 128x128": (("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
                       "instrShape = [16, 128, 16]}>"), "128x128", "f32"),
    "blocked 128x128": (("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
                        "order = [1, 0]}>"), "128x128", "f16"),
    "nvmma_shared 128x128": (("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, "
                             "elementBitWidth = 16}>"), "128x128", "f16"),
}

# The grid is on screen: an SVG grid once the document is parsed (every cell is in it), a canvas
# grid once its script has drawn it (data-drawn). Two frames later it has been painted.
_READY_JS = """() => {
  const grid = document.getElementById('layout-grid');
  if (!grid) return null;
  const done = grid.tagName.toLowerCase() === 'svg' ? document.readyState !== 'loading' : grid.dataset.drawn;
  return done ? true : null;
}"""

_PAINTED_JS = """async () => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const grid = document.getElementById('layout-grid').getBoundingClientRect();
  const info = document.getElementById('layout-info');
  const side = info ? info.getBoundingClientRect() : null;
  return {grid_painted_ms: performance.now(), response_end_ms: nav.responseEnd,
          dom_content_loaded_ms: nav.domContentLoadedEventEnd, fcp_ms: fcp ? fcp.startTime : null,
          transfer_bytes: nav.transferSize, page_bytes: nav.decodedBodySize,
          grid_box: [Math.round(grid.left), Math.round(grid.top), Math.round(grid.width), Math.round(grid.height)],
          readout_top: side ? Math.round(side.top) : null, viewport: [innerWidth, innerHeight]};
}"""


def _path(attr: str, shape: str, dtype: str) -> str:
    return f"/-/layout?attr={quote(attr, safe='')}&shape={shape}&dtype={dtype}"


def _server_times(base: str, path: str, warm_repeats: int) -> dict:
    """Seconds to the last byte for the first request (nothing cached) and the warm median."""
    with httpx.Client(timeout=60, headers={"Accept-Encoding": "gzip"}) as client:
        start = time.perf_counter()
        first = client.get(base + path)
        cold = time.perf_counter() - start
        warm = []
        for _ in range(warm_repeats):
            start = time.perf_counter()
            client.get(base + path)
            warm.append(time.perf_counter() - start)
    return {"status": first.status_code, "html_bytes": len(first.content),
            "gzip_bytes": len(gzip.compress(first.content, 6)), "server_cold_s": cold,
            "server_warm_p50_s": statistics.median(warm)}


def measure_inspector(repeats: int = 5, warm_repeats: int = 10) -> dict:
    """Per layout: server cold/warm seconds, page bytes, and the grid's first paint in Chromium (a fresh
    browser context per visit, so nothing is in the browser's cache; the server's cache is warm after
    the first visit, as it is for any page a second reader opens)."""
    sys.path.insert(0, str(REPO))
    from tests.browser_support import chromium_available, launch_browser

    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="irlens-bench-inspector-") as tmp:
        data = Path(tmp)
        with server.serve(f"sqlite:///{data / 'inspector.db'}", data) as (base, _log):
            for name, (attr, shape, dtype) in LAYOUTS.items():
                results[name] = _server_times(base, _path(attr, shape, dtype), warm_repeats)
            if not chromium_available():
                results["browser"] = {"skipped": "Chromium or Playwright not available"}
                return results
            from playwright.sync_api import sync_playwright

            with sync_playwright() as playwright:
                browser = launch_browser(playwright)
                try:
                    for name, (attr, shape, dtype) in LAYOUTS.items():
                        visits = []
                        for _ in range(repeats):
                            context = browser.new_context(viewport={"width": 1400, "height": 1000})
                            page = context.new_page()
                            page.goto(base + _path(attr, shape, dtype), wait_until="commit", timeout=60_000)
                            page.wait_for_function(_READY_JS, timeout=60_000, polling="raf")
                            visits.append(page.evaluate(_PAINTED_JS))
                            context.close()
                        painted = [visit["grid_painted_ms"] for visit in visits]
                        results[name].update(
                            first_paint_p50_ms=statistics.median(painted),
                            first_paint_range_ms=[min(painted), max(painted)],
                            last_visit=visits[-1],
                        )
                finally:
                    browser.close()
    return results


def table_rows(results: dict) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, figures in results.items():
        if "skipped" in figures:
            rows.append((f"inspector: {name}", figures["skipped"], "", ""))
            continue
        paint = figures.get("first_paint_p50_ms")
        rows.append((f"inspector {name}: grid painted (p50, fresh browser)",
                     f"{paint:.0f} ms" if paint is not None else "-", "", "≤ 300 ms"))
        rows.append((f"inspector {name}: page size", (f"{figures['html_bytes'] / 1000:.0f} KB "
                     f"({figures['gzip_bytes'] / 1000:.0f} KB gzipped)"), "", "≤ 200 KB"))
        rows.append((f"inspector {name}: server cold / warm", (f"{figures['server_cold_s'] * 1000:.0f} ms / "
                     f"{figures['server_warm_p50_s'] * 1000:.1f} ms"), "", ""))
    return rows


if __name__ == "__main__":
    print(json.dumps(measure_inspector(), indent=1))
