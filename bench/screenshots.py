"""The README's screenshots (docs/img/*.png), made again from the demo run whenever pages change.

    .venv/bin/python -m bench.screenshots [--out docs/img] [--width 1400] [--height 900]

Starts a real `irlens serve` on an empty SQLite database in a temp folder with the demo loaded (the
app ingests app/demo/demo.tar.xz on start), finds every page through the demo run's .json twins and
app/urls.py (no ids or snapshot numbers are written here), and photographs each in system Chromium
(tests/browser_support.py: /usr/bin/chromium or $IRLENS_CHROMIUM) through Playwright. With Pillow
installed (`pip install pillow`) each PNG is cut to a 256-colour palette, a third of the size or less;
without it the PNGs stay as Chromium wrote them.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

import httpx

from app.urls import Urls, compilation_id
from bench.inputs import REPO
from bench.server import serve

# The demo's NVIDIA matmul (TMA, wgmma) is the tour's kernel; its AMD gfx942 twin is the comparison's
# other side (app/demo/README.md).
TOUR_KERNEL = "matmul_descriptor_kernel"
OTHER_KERNEL = "matmul_kernel"
# The pass whose output (snapshot, with the Python pane) and diff the tour shows: tensor descriptors
# lowered to TMA copies and barriers.
TOUR_PASS = "TritonNvidiaGPUTMALoweringPass"
OP_QUERY = "op:tt.dot"


# The lowest painted element's bottom edge (the root's own height is never less than the viewport's).
_CONTENT_BOTTOM_JS = """Math.ceil(Math.max(0, ...Array.from(document.body.querySelectorAll('*'),
    element => element.getBoundingClientRect().bottom).filter(Number.isFinite)))"""


def _json(client: httpx.Client, url: str) -> dict:
    response = client.get(Urls().json(url))
    response.raise_for_status()
    return response.json()


def tour_pages(client: httpx.Client) -> list[tuple[str, str]]:
    """(file name, URL) of each screenshot, found through the demo run's JSON."""
    urls = Urls()
    runs = _json(client, urls.home())["runs"]
    demo = next(run for run in runs if "demo" in run["tags"])
    run = _json(client, demo["url"])
    by_kernel = {compilation["kernel"]: compilation for compilation in run["compilations"]}
    tour, other = by_kernel[TOUR_KERNEL], by_kernel[OTHER_KERNEL]
    compilation = _json(client, tour["url"])
    snapshots = compilation["snapshots"]
    # A "before" dump holds the pass's input: its output is the next dump.
    position = next(n for n, snapshot in enumerate(snapshots) if snapshot["pass"] == TOUR_PASS)
    step = snapshots[position + 1] if snapshots[position]["when"] == "before" else snapshots[position]
    snapshot = _json(client, step["url"])
    # The layout inspector on the first convert_layout from this snapshot on: both encodings, the
    # shape, element type and target, as the snapshot page's own link has them.
    conversion = next(found[0] for found in (
        _json(client, later["url"])["conversions"] for later in snapshots[snapshots.index(step):]) if found)
    layout = urls.layout(conversion["src"], conversion["shape"], to=conversion["dst"],
                         dtype=conversion["dtype"], target=conversion["target"])
    return [
        ("run.png", demo["url"]),
        ("snapshot.png", step["url"]),
        ("diff.png", snapshot["diff_prev_url"]),
        ("compare.png", urls.compare(compilation_id(run["run"], tour["id"]), compilation_id(run["run"], other["id"]))),
        ("layout.png", layout),
        ("op-search.png", urls.search(OP_QUERY)),
    ]


def shrink_png(data: bytes) -> bytes:
    """The PNG cut to a 256-colour palette (UI pixels are a few flat colours and anti-aliased text),
    or as it was without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return data
    image = Image.open(io.BytesIO(data)).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return min(data, out.getvalue(), key=len)


def photograph(base: str, pages: list[tuple[str, str]], out_dir: Path, width: int, height: int) -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser_support import chromium_available, chromium_path, launch_browser

    if not chromium_available():
        raise SystemExit(f"screenshots: no Chromium at {chromium_path()} (set IRLENS_CHROMIUM) or no Playwright")
    out_dir.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            for name, url in pages:
                context = browser.new_context(viewport={"width": width, "height": height})
                page = context.new_page()
                page.goto(base + url, wait_until="networkidle", timeout=120_000)
                page.wait_for_timeout(300)
                # A short page is cut below its content rather than padded with blank viewport.
                content = page.evaluate(_CONTENT_BOTTOM_JS)
                clip = {"x": 0, "y": 0, "width": width, "height": min(height, content + 16)}
                data = shrink_png(page.screenshot(clip=clip))
                (out_dir / name).write_bytes(data)
                print(f"{name:16} {len(data) / 1024:6.0f} KB  {url}")
                context.close()
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img", help="folder for the PNGs")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="irlens-screenshots-") as folder:
        data_dir = Path(folder)
        with serve(f"sqlite:///{data_dir / 'irlens.db'}", data_dir, env={"IRLENS_LOAD_DEMO": "true"}) as (base, _log):
            with httpx.Client(base_url=base, timeout=60) as client:
                pages = tour_pages(client)
            photograph(base, pages, args.out, args.width, args.height)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
