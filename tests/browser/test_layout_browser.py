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


def test_clicking_an_alias_in_a_snapshot_opens_its_layout(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["snapshot"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    shape = page.evaluate(FIRST_TYPED_USE, ".ir a.ly:not(.def)")
    assert shape, "no alias used in a tensor type"
    alias = page.locator("[data-test-use]").get_attribute("data-ly")
    page.locator("[data-test-use]").click()
    expect(page).to_have_url(re.compile(r"/-/layout\?attr=.*&shape=" + shape))
    grid = page.locator("#layout-grid")
    expect(grid).to_be_visible()
    expect(page.locator(".layout-legend")).to_contain_text("warp 0")
    # The picture is the JSON's owners: the first cell is held by the first owner's lane.
    body = httpx.get(page.url.replace("/-/layout?", "/-/layout.json?"), timeout=60).json()
    first = body["owners"][0][0]
    expect(grid.locator("g.cell").first.locator("text")).to_have_text(str(first[0] % body["threads_per_warp"]))
    # Keyboard: select, move right, and the address shares the selected cell.
    grid.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"#cell=0,1$"))
    expect(page.locator("#layout-info")).to_contain_text("0, 1: T")
    shared = page.url
    page.goto(shared)
    expect(page.locator("g.cell.selected")).to_have_count(1)
    expect(page.locator("g.cell.selected")).to_have_attribute("data-c", "1")
    assert alias
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
    expect(page.locator("#layout-grid g.cell").first).to_be_visible()
    assert page_errors == []


def test_large_tensors_fold_and_the_brackets_move_between_windows(server_url, browser_page, page_errors):
    page = browser_page
    attr = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>"
    page.goto(server_url + Urls().layout(attr, "128x256"))
    expect(page.locator(".layout-note").first).to_contain_text("folded: rows 0-63 of 128, columns 0-63 of 256")
    page.locator("#layout-grid").focus()
    page.keyboard.press("]")
    expect(page.locator(".layout-note").first).to_contain_text("columns 64-127 of 256")
    # The key opened another page: its script listens for keys once it has loaded (under load, the
    # note's text can be there before it).
    page.wait_for_load_state("load")
    page.locator("#layout-grid").focus()
    page.keyboard.press("}")
    expect(page.locator(".layout-note").first).to_contain_text("rows 64-127 of 128")
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
    expect(page.locator("#layout-grid g.cell").first).to_be_visible()
    assert page_errors == []
