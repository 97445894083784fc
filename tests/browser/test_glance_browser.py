"""Issue 28 in Chromium at 1400x1000: pages that answer at a glance (the map page's source overview,
the compilation page's pass filter and keys, the search box, diagnostics linked to source)."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import upload_via_api
from tests.conftest import corpus_archive


@pytest.fixture(scope="module")
def mix(server_url):
    run = upload_via_api(server_url, corpus_archive("sm90_mix"), title="glance browser test")
    compilation = next(c for c in run["compilations"] if c["kernel"] == "matmul_descriptor_kernel")
    return {"server": server_url, "run": run, "compilation": server_url + compilation["url"]}


@pytest.fixture
def wide(browser_page):
    browser_page.set_viewport_size({"width": 1400, "height": 1000})
    return browser_page


def test_the_map_page_opens_on_the_source_with_counts_per_line(mix, wide, page_errors):
    """Without a line, the map page shows the Python source with each line's IR line count in one
    pass; the counts are those the snapshot page's own Python pane shows for that pass."""
    page = wide
    page.goto(mix["compilation"] + "/map")
    table = page.locator(".map-overview table.map-source-table").last
    expect(table).to_be_visible()
    counted = page.locator(".map-overview tr.has-ir")
    assert counted.count() >= 5
    at = page.locator(".map-pass select[name=at]").input_value()

    def counts() -> dict[int, int]:
        found = {}
        for row in page.locator(".map-overview tr.has-ir").all():
            found[int(row.get_attribute("id")[1:])] = int(row.locator("td.count").inner_text())
        return found

    def pane_counts(index: str) -> dict[int, int]:
        page.goto(f"{mix['compilation']}/s/{index}?all=1")
        expect(page.locator("[data-ready]")).to_have_count(1)
        rows = page.locator(".pl.mapped").all()
        return {int(row.get_attribute("data-l")): int(row.locator(".cnt").inner_text()) for row in rows}

    shown = counts()
    assert shown == pane_counts(at)
    # Another pass: the select answers at once, and its counts are that pass's.
    page.goto(mix["compilation"] + "/map")
    detail = httpx.get(mix["compilation"] + ".json", timeout=60).json()
    other = next(s["index"] for s in detail["snapshots"] if s["stage"] == "ttir" and s["index"] > 2)
    page.locator(".map-pass select[name=at]").select_option(str(other))
    expect(page).to_have_url(re.compile(rf"at={other}"))
    other_counts = counts()
    assert other_counts and other_counts == pane_counts(str(other))
    # A line's link follows it through every pass.
    page.goto(mix["compilation"] + "/map")
    line = next(iter(shown))
    page.locator(f"#P{line} td.count a").click()
    expect(page.locator("h1")).to_contain_text(f":{line} in every pass")
    assert page_errors == []


def test_the_pass_list_filters_jumps_and_documents_its_keys(mix, wide, page_errors):
    page = wide
    detail = httpx.get(mix["compilation"] + ".json", timeout=60).json()
    snapshots = detail["snapshots"]
    page.goto(mix["compilation"])
    rows = page.locator("#timeline tr.pass")
    expect(rows).to_have_count(len(snapshots))
    # by stage: exactly the JSON's ttgir snapshots stay
    page.keyboard.press("/")
    expect(page.locator("#pass-filter")).to_be_focused()
    page.keyboard.type("ttgir")
    ttgir = [s["index"] for s in snapshots if s["stage"] == "ttgir"]
    visible = page.locator("#timeline tr.pass:visible")
    expect(visible).to_have_count(len(ttgir))
    assert [int(i) for i in visible.locator("td.idx").all_inner_texts()] == ttgir
    # by name, words together: a stage and a pass
    name = next(s["pass"] for s in snapshots if s["stage"] == "ttgir" and s["pass"].startswith("TritonGPU"))
    page.locator("#pass-filter").fill(f"ttgir {name.lower()}")
    wanted = [s["index"] for s in snapshots if s["stage"] == "ttgir" and name.lower() in s["pass"].lower()]
    expect(page.locator("#timeline tr.pass:visible")).to_have_count(len(wanted))
    # Enter jumps to the first pass shown
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/s/{wanted[0]}$"))
    # an index jumps to that pass
    page.go_back()
    page.locator("#pass-filter").fill("#7")
    expect(page.locator("#timeline tr.pass:visible")).to_have_count(1)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/s/7$"))
    # ? shows the keys the list answers
    page.go_back()
    page.locator("#pass-filter").fill("")
    page.locator("h1").click()
    page.keyboard.press("?")
    overlay = page.locator("#pass-help")
    expect(overlay).to_be_visible()
    for key in ("j", "k", "Enter", "d", "/"):
        expect(overlay.locator("kbd", has_text=re.compile(rf"^{re.escape(key)}$")).first).to_be_visible()
    page.keyboard.press("Escape")
    expect(overlay).to_be_hidden()
    # j marks a row, d opens its diff
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("#timeline tr.pass.cursor")).to_have_count(1)
    # sparklines fill their column
    cell = page.locator("td.spark-cell").first.bounding_box()
    spark = page.locator("td.spark-cell svg.spark").first.bounding_box()
    assert spark["width"] >= cell["width"] - 20, (spark, cell)
    assert page_errors == []


def test_comparisons_and_diffs_share_their_ignore_defaults(mix, wide, page_errors):
    """The compare page and the diff page open with the same Ignore switches (locations ignored), and
    the diff a comparison row links to ignores what the comparison does."""
    page = wide
    run = mix["run"]
    kernels = [c for c in run["compilations"] if c["kernel"] == "matmul_descriptor_kernel"]
    other = next(c for c in run["compilations"] if c["id"] != kernels[0]["id"] and c["kernel"] == "matmul_kernel")
    a_id, b_id = (f"{run['run']}-{c['id']}" for c in (kernels[0], other))

    def switches() -> dict[str, str]:
        return {name: page.locator(f".ignore a.chk[data-option={name}]").get_attribute("aria-checked")
                for name in ("loc", "ssa", "alias")}

    page.goto(f"{mix['server']}/compare/{a_id}..{b_id}")
    compare_defaults = switches()
    page.goto(f"{mix['server']}/diff/{a_id}-0..{b_id}-0")
    diff_defaults = switches()
    assert compare_defaults == diff_defaults == {"loc": "true", "ssa": "false", "alias": "false"}
    # Compared locations on the compare page: its diff links compare them too, and show it.
    page.goto(f"{mix['server']}/compare/{a_id}..{b_id}")
    page.locator(".ignore a.chk[data-option=loc]").click()
    expect(page.locator(".ignore a.chk[data-option=loc]")).to_have_attribute("aria-checked", "false")
    expect(page).to_have_url(re.compile(r"loc=1"))
    link = page.locator("#compare-table a[href*='/diff/']").first
    assert "loc=1" in link.get_attribute("href")
    page.goto(mix["server"] + link.get_attribute("href"))
    expect(page.locator(".ignore a.chk[data-option=loc]")).to_have_attribute("aria-checked", "false")
    assert page_errors == []


def test_the_search_box_says_what_it_searches_and_op_tma_offers_the_group(mix, wide, page_errors):
    page = wide
    page.goto(mix["server"] + "/")
    box = page.locator(".topbar input[name=q]")
    for what in ("runs", "kernels", "ops"):
        assert what in box.get_attribute("placeholder") and what in box.get_attribute("title")
    box.fill("op:tma")
    box.press("Enter")
    related = page.locator("a.related", has_text="group:tma")
    expect(related).to_be_visible()
    related.click()
    # the group's search finds the TMA kernel of the capture (its IR holds TMA ops; the JSON says so)
    body = httpx.get(mix["server"] + "/search.json", params={"q": "group:tma"}, timeout=60).json()
    kernels = {c["kernel"] for c in body["compilations"]}
    assert "matmul_descriptor_kernel" in kernels
    expect(page.locator("#op-results")).to_contain_text("matmul_descriptor_kernel")
    assert page_errors == []


@pytest.fixture(scope="module")
def failed(server_url):
    return upload_via_api(server_url, corpus_archive("gfx1250_fail"), title="glance failed compile")


def test_a_failed_compiles_diagnostic_links_to_its_source_line(server_url, failed, wide, page_errors):
    """gfx1250_fail's verifier error names kernels.py:LINE:COL: the location links to that line of the
    uploaded kernels.py, whose text there is the line the diagnostic's own excerpt quotes."""
    page = wide
    compilation = next(c for c in failed["compilations"] if c["status"] == "failed")
    detail = httpx.get(f"{server_url}{compilation['url']}.json", timeout=60).json()
    diagnostic = next(d for d in detail["diagnostics"] if d["file"] and d["line"])
    page.goto(server_url + compilation["url"])
    name = diagnostic["file"].rsplit("/", 1)[-1]
    link = page.locator("#diagnostics a.loc", has_text=f"{name}:{diagnostic['line']}").first
    expect(link).to_be_visible()
    link.click()
    expect(page).to_have_url(re.compile(rf"/src/.*{re.escape(name)}#L{diagnostic['line']}$"))
    target = page.locator(f"tr#L{diagnostic['line']}")
    expect(target).to_be_in_viewport()
    # the uploaded file's own line (its raw text, from the JSON twin) is the one shown
    body = httpx.get(page.url.split("#")[0] + ".json", timeout=60).json()
    wanted = body["text"].split("\n")[diagnostic["line"] - 1]
    assert wanted.strip() and target.locator("td.code").inner_text() == wanted
    # the run page links it too
    page.goto(server_url + failed["url"])
    expect(page.locator("#diagnostics a.loc", has_text=f":{diagnostic['line']}").first).to_be_visible()
    assert page_errors == []


def test_text_files_beside_the_logs_are_notes_not_warnings(server_url, failed, wide, page_errors):
    page = wide
    page.goto(server_url + failed["url"])
    notes = page.locator("#log-notes")
    expect(notes).to_contain_text("meta.txt")
    expect(notes).to_contain_text("stdout.txt")
    expect(page.locator("#warnings-table tr", has_text="no Triton IR")).to_have_count(0)
    expect(page.locator("#warnings .empty")).to_be_visible()  # nothing else to warn about in this capture
    # the failed compile shows the target its log's other compilations (and meta.txt) name
    assert {c["target"] for c in failed["compilations"]} == {"hip:gfx1250"}
    assert page_errors == []


def test_long_lines_the_python_pane_and_the_op_history_fit(mix, wide, page_errors):
    """At 1400 px: a convert_layout's cost note is on screen at the end of a long line (no wrap); the
    Python pane hides and resizes, remembered across pages; the op history's Pass column is whole."""
    page = wide
    detail = httpx.get(mix["compilation"] + ".json", timeout=60).json()
    snap = next(s for s in detail["snapshots"] if s["conversions"])
    page.goto(mix["server"] + snap["url"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    line = page.locator(".ln[data-cvt]").first
    line.scroll_into_view_if_needed()
    note = line.evaluate("""(el) => {
      const pane = document.getElementById('ir-pane').getBoundingClientRect();
      const after = getComputedStyle(el, '::after');
      const range = el.getBoundingClientRect();
      return {content: after.content, position: after.position, lineRight: range.right, paneRight: pane.right};
    }""")
    assert "⇄" in note["content"] and note["position"] == "sticky"
    # the note is drawn at the pane's right edge: what is under that point is this line
    box = line.bounding_box()
    pane = page.locator("#ir-pane").bounding_box()
    hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('.ln')?.id",
                        [pane["x"] + pane["width"] - 30, box["y"] + box["height"] / 2])
    assert hit == line.get_attribute("id")
    # the Python pane: hidden, remembered on another snapshot, shown again; resized by its edge
    src = page.locator("#src-pane")
    expect(src).to_be_visible()
    page.locator("#python-toggle").click()
    expect(src).to_be_hidden()
    page.goto(mix["server"] + detail["snapshots"][1]["url"])
    expect(page.locator("#src-pane")).to_be_hidden()
    page.locator("#python-toggle").click()
    expect(page.locator("#src-pane")).to_be_visible()
    before = page.locator("#src-pane").bounding_box()["width"]
    edge = page.locator("#pane-split").bounding_box()
    page.mouse.move(edge["x"] + 3, edge["y"] + 200)
    page.mouse.down()
    page.mouse.move(edge["x"] - 200, edge["y"] + 200, steps=5)
    page.mouse.up()
    wider = page.locator("#src-pane").bounding_box()["width"]
    assert wider > before + 150
    page.reload()
    assert abs(page.locator("#src-pane").bounding_box()["width"] - wider) < 3
    # the op history of an op line: the table fits the window and shows pass names whole
    page.goto(mix["server"] + snap["url"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    number = page.locator(".ln[data-cvt]").first.get_attribute("id")[1:]
    page.goto(f"{mix['compilation']}/history?s={snap['index']}&line={number}")
    table = page.locator("#history")
    expect(table).to_be_visible()
    assert table.bounding_box()["width"] <= 1400
    for cell in page.locator("#history td.pass-cell").all()[:20]:
        name = cell.locator(".pass-name")
        assert name.evaluate("(el) => el.getBoundingClientRect().right <= el.parentElement.getBoundingClientRect().right + 1"), \
            name.inner_text()
    assert page_errors == []
