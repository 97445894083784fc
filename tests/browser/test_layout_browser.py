"""The layout inspector in Chromium: opened from a layout alias on snapshot and diff pages, drawn,
navigated with the keyboard, shared by its link."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from app.urls import Urls
from tests.browser.conftest import upload_via_api
from tests.conftest import corpus_archive

# A use of an alias right after a tensor type's element type: `tensor<64x128xf16, #blocked>`.
FIRST_TYPED_USE = """(selector) => {
  const uses = Array.from(document.querySelectorAll(selector));
  const index = uses.findIndex((use) => {
    const code = use.closest(".code, td.c") || use.parentElement;
    const range = document.createRange();
    range.setStart(code, 0);
    range.setEndBefore(use);
    return /tensor<(?:\\d+x)+[^,<>]*, $/.test(range.toString());
  });
  if (index < 0) return null;
  const use = uses[index];
  use.setAttribute("data-test-use", "1");
  const code = use.closest(".code, td.c") || use.parentElement;
  const range = document.createRange();
  range.setStart(code, 0);
  range.setEndBefore(use);
  return /tensor<((?:\\d+x)+)[^,<>]*, $/.exec(range.toString())[1].slice(0, -1);
}"""


@pytest.fixture(scope="module")
def matmul(server_url):
    run = upload_via_api(server_url, corpus_archive("sm90_mix"), title="layout browser test")
    compilation = next(c for c in run["compilations"] if c["kernel"] == "matmul_descriptor_kernel")
    detail = httpx.get(f"{server_url}{compilation['url']}.json", timeout=60).json()
    snapshots = detail["snapshots"]
    # The pass that makes the mma layout: its before/after pair differs in layouts.
    index = next(s["index"] for s in snapshots if s["pass"] == "TritonGPUAccelerateMatmul")
    return {"snapshot": server_url + snapshots[index + 1]["url"], "run": run["run"], "index": index,
            "server": server_url}


def _cell_point(page, r: int, c: int) -> tuple[float, float]:
    """Where cell (r, c) of the inspector's canvas is on screen (the page says its cell size)."""
    grid = page.locator("#layout-grid")
    box = grid.bounding_box()
    size, x0, y0 = (float(grid.get_attribute(k)) for k in ("data-cell-size", "data-origin-x", "data-origin-y"))
    return box["x"] + x0 + (c + 0.5) * size, box["y"] + y0 + (r + 0.5) * size


def _expected(body: dict, r: int, c: int) -> str:
    """The answer for cell (r, c) of a 2-D distributed layout, from the JSON twin's owners."""
    tpw = body["threads_per_warp"]
    owners = body["owners"][r * body["shape"][1] + c]
    return f"({r}, {c}): " + "\n".join(
        f"T{t} (warp {t // tpw}, lane {t % tpw}) register {reg}" for t, reg, *_ in owners)


def test_clicking_an_alias_in_a_snapshot_opens_its_layout(matmul, browser_page, page_errors):
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(matmul["snapshot"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    shape = page.evaluate(FIRST_TYPED_USE, ".ir a.ly:not(.def)")
    assert shape, "no alias used in a tensor type"
    alias = page.locator("[data-test-use]").get_attribute("data-ly")
    page.locator("[data-test-use]").click()
    expect(page).to_have_url(re.compile(r"/-/layout\?attr=.*&shape=" + shape + "&elem="))
    grid = page.locator("#layout-grid[data-drawn]")
    expect(grid).to_be_visible()
    expect(page.locator(".layout-legend")).to_contain_text("warp 0")
    body = httpx.get(page.url.replace("/-/layout?", "/-/layout.json?"), timeout=60).json()
    rows, cols = body["shape"]
    # Hover answers beside the grid, as the JSON's owners say; the readout is in view, right of the grid.
    for r, c in ((0, 0), (rows // 2, cols // 3), (rows - 1, cols - 1)):
        page.mouse.move(*_cell_point(page, r, c))
        expect(page.locator("#layout-hover")).to_have_text(_expected(body, r, c))
    info = page.locator("#layout-info").bounding_box()
    grid_box = grid.bounding_box()
    assert info["x"] >= grid_box["x"] + grid_box["width"] and info["y"] + info["height"] <= 1000
    assert grid_box["y"] + grid_box["height"] <= 1000, "the fitted grid is in view"
    # A click selects; keyboard moves; the address shares the selected cell.
    page.mouse.click(*_cell_point(page, 0, 0))
    expect(page.locator("#layout-info")).to_have_text(_expected(body, 0, 0))
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"#cell=0,1$"))
    expect(page.locator("#layout-info")).to_have_text(_expected(body, 0, 1))
    page.goto(page.url)
    page.reload()
    expect(page.locator("#layout-info")).to_have_text(_expected(body, 0, 1))
    assert alias
    assert page_errors == []


def test_layout_chips_open_the_inspector_at_a_use(matmul, browser_page, page_errors):
    """Beside each drawable alias chip above a snapshot, a link opens the inspector at the shape and
    element type of a use in the IR (the chip itself still jumps to the definition), and the
    inspector shows that element type."""
    page = browser_page
    page.goto(matmul["snapshot"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    raw = httpx.get(matmul["snapshot"] + "/raw", timeout=60).text
    chips = page.locator(".ly-legend a.ly-draw[href*='/-/layout?']")
    assert chips.count() >= 2
    for k in range(chips.count()):
        query = parse_qs(urlsplit(chips.nth(k).get_attribute("href")).query)
        alias = chips.nth(k).get_attribute("data-ly")
        # the shape and element type are those of a use of this alias in the raw IR
        assert f"<{query['shape'][0]}x{query['elem'][0]}, #{alias}" in raw, (alias, query)
        assert query["attr"][0].startswith("#ttg.")
    first = chips.first
    elem = parse_qs(urlsplit(first.get_attribute("href")).query)["elem"][0]
    first.click()
    expect(page.locator("#layout-grid[data-drawn]")).to_be_visible()
    expect(page.locator("#layout-elem")).to_have_text(elem)
    assert page_errors == []


def test_the_top_bar_opens_the_inspector(server_url, browser_page, page_errors):
    page = browser_page
    page.goto(server_url + "/")
    page.locator(".topbar a.nav-link", has_text="Layouts").click()
    expect(page.locator(".layout-form textarea[name=attr]")).to_be_visible()
    assert page_errors == []


def test_clicking_an_alias_in_a_diff_opens_its_layout(matmul, browser_page, page_errors):
    page = browser_page
    run, index = matmul["run"], matmul["index"]
    page.goto(f"{matmul['server']}/diff/{run}-{_ordinal(matmul)}-{index}..{run}-{_ordinal(matmul)}-{index + 1}"
              "?view=split&context=-1")
    shape = page.evaluate(FIRST_TYPED_USE, "table.diff-table td.c span.nd")
    assert shape, "no alias used in a tensor type in the diff"
    page.locator("[data-test-use]").click()
    expect(page).to_have_url(re.compile(r"/-/layout\?attr=.*&shape=" + shape))
    expect(page.locator("#layout-grid[data-drawn]")).to_be_visible()
    assert page_errors == []


def test_large_tensors_are_drawn_whole_fitted_and_zoom(server_url, browser_page, page_errors):
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1000})
    attr = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>"
    url = server_url + Urls().layout(attr, "128x256")
    page.goto(url)
    grid = page.locator("#layout-grid[data-drawn]")
    expect(grid).to_be_visible()
    box = grid.bounding_box()
    assert box["y"] + box["height"] <= 1000 and box["x"] + box["width"] <= 1400, box
    body = httpx.get(url.replace("/-/layout?", "/-/layout.json?"), timeout=60).json()
    page.mouse.move(*_cell_point(page, 127, 255))
    expect(page.locator("#layout-hover")).to_have_text(_expected(body, 127, 255))
    fitted = int(grid.get_attribute("data-cell-size"))
    grid.focus()
    page.keyboard.press("+")
    expect(grid).not_to_have_attribute("data-cell-size", str(fitted))
    assert int(grid.get_attribute("data-cell-size")) > fitted
    page.mouse.move(*_cell_point(page, 3, 5))  # the zoomed grid still answers per cell
    expect(page.locator("#layout-hover")).to_have_text(_expected(body, 3, 5))
    page.keyboard.press("0")
    expect(grid).to_have_attribute("data-cell-size", str(fitted))
    assert page_errors == []


def test_shared_layouts_answer_offsets_and_banks(server_url, browser_page, page_errors):
    page = browser_page
    attr = "#ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>"
    url = server_url + Urls().layout(attr, "16x32", elem="f16")
    page.goto(url)
    expect(page.locator("#layout-grid[data-drawn]")).to_be_visible()
    body = httpx.get(url.replace("/-/layout?", "/-/layout.json?"), timeout=60).json()
    for r, c in ((0, 0), (1, 5), (15, 31)):
        page.mouse.move(*_cell_point(page, r, c))
        e = r * 32 + c
        expect(page.locator("#layout-hover")).to_have_text(
            f"({r}, {c}): offset {body['offsets'][e]}, bank {body['banks'][e]}")
    assert page_errors == []


def _ordinal(matmul: dict) -> int:
    return int(matmul["snapshot"].split("/c/")[1].split("/")[0])


def test_convert_layout_lines_show_their_cost(server_url, matmul, browser_page, page_errors):
    """Each ttg.convert_layout line is marked with what its lowering costs; the list links draw it."""
    page = browser_page
    detail = httpx.get(matmul["snapshot"].rsplit("/s/", 1)[0] + ".json",
                       timeout=60).json()
    snap = next((s for s in detail["snapshots"] if s["conversions"].get("shared")), None)
    assert snap, "no pass converts through shared memory"
    page.goto(server_url + snap["url"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    legend = page.locator("#cvt-legend")
    expect(legend).to_contain_text("through shared memory")
    first = legend.locator("li[data-cvt-kind=shared]").first
    line = first.get_attribute("data-cvt-line")
    expect(page.locator(f"#L{line}")).to_have_attribute("data-cvt", "shared")
    legend.locator("summary").click()
    first.locator("a", has_text="draw").click()
    expect(page).to_have_url(re.compile(r"/-/layout\?attr=.*&to="))
    expect(page.locator(".layout-cvt")).to_contain_text("round trip through shared memory")
    assert page_errors == []


# A use on side B (the split table's fourth cell) of an alias in `aliases`, inside a tensor type.
B_SIDE_USE = """([selector, aliases]) => {
  for (const use of document.querySelectorAll(selector)) {
    const cell = use.closest("td.c");
    if (!cell || cell.cellIndex !== 3 || !aliases.includes(use.textContent.slice(1))) continue;
    const range = document.createRange();
    range.setStart(cell, 0);
    range.setEndBefore(use);
    const match = /tensor<((?:\\d+x)+)[^,<>]*, $/.exec(range.toString());
    if (!match) continue;
    use.setAttribute("data-test-use", "1");
    return [use.textContent.slice(1), match[1].slice(0, -1)];
  }
  return null;
}"""
ALIAS_LINE = re.compile(r"^#([\w$-]+) = (#ttg\.blocked<.*>)$", re.MULTILINE)


def test_clicking_an_alias_in_a_comparison_preview_opens_that_sides_layout(server_url, browser_page, page_errors):
    """Two autotune configs: a row's preview holds aliases with the same name and different
    layouts on the two sides; a click on side B's use opens B's layout, not A's."""
    run = upload_via_api(server_url, corpus_archive("gpu_autotune"), title="layout compare test")
    matmuls = [c for c in run["compilations"] if c["kernel"] == "matmul_kernel"]
    a_id, b_id = (f"{run['run']}-{c['id']}" for c in (matmuls[0], matmuls[-1]))
    data = httpx.get(f"{server_url}/compare/{a_id}..{b_id}.json", timeout=60).json()
    page = browser_page
    page.goto(f"{server_url}/compare/{a_id}..{b_id}?context=all")
    for k, row in enumerate(data["pairs"]):
        if row["identical"] or row["a"] is None or row["b"] is None:
            continue
        a_defs, b_defs = ({name: attr for name, attr in ALIAS_LINE.findall(
            httpx.get(f"{server_url}{Urls().snapshot_raw(run['run'], c['id'], row[side])}", timeout=60).text)}
            for c, side in ((matmuls[0], "a"), (matmuls[-1], "b")))
        differing = sorted(name for name in b_defs if name in a_defs and a_defs[name] != b_defs[name])
        if not differing:
            continue
        page.locator(f"#r{k} .preview-toggle").click()
        expect(page.locator(f"#r{k} + tr.preview-row table.diff-table")).to_be_visible()
        found = page.evaluate(B_SIDE_USE, [f"#r{k} + tr.preview-row td.c span", differing])
        if found:
            break
        page.locator(f"#r{k} .preview-toggle").click()
    else:
        pytest.fail("no comparison row shows a B-side use of an alias whose layout differs between the sides")
    name, shape = found
    page.locator("[data-test-use]").click()
    expect(page).to_have_url(re.compile(r"/-/layout\?attr=.*&shape=" + shape))
    attr = parse_qs(urlsplit(page.url).query)["attr"][0]
    assert attr == b_defs[name] and attr != a_defs[name]
    expect(page.locator("#layout-grid[data-drawn]")).to_be_visible()
    assert page_errors == []
