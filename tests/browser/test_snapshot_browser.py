"""The compilation and snapshot pages in Chromium, against a real server with sm90_mix uploaded."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import upload_via_api
from tests.conftest import corpus_archive


@pytest.fixture(scope="module")
def matmul(server_url):
    """URLs of sm90_mix's TMA kernel: its compilation page and the snapshot after TMA lowering."""
    run = upload_via_api(server_url, corpus_archive("sm90_mix"))
    compilation = next(c for c in run["compilations"] if c["kernel"] == "matmul_descriptor_kernel")
    detail = httpx.get(f"{server_url}{compilation['url']}.json", timeout=60).json()
    lowering = next(s for s in detail["snapshots"] if s["pass"] == "TritonNvidiaGPUTMALoweringPass")
    after = detail["snapshots"][lowering["index"] + 1]
    return {
        "compilation": server_url + compilation["url"],
        "first": server_url + detail["snapshots"][0]["url"],
        "snapshot": server_url + after["url"],
        "snapshot_path": after["url"],
        "index": after["index"],
        "base": compilation["url"],
    }


def snapshot_url(matmul: dict, index: int) -> re.Pattern[str]:
    return re.compile(re.escape(matmul["base"]) + rf"/s/{index}(#.*)?$")


def ready(page) -> None:
    """Wait until snapshot.js has set the page up (its key handlers are in place)."""
    expect(page.locator("[data-ready]")).to_have_count(1)


def pane_line(page, section: str, number: int):
    """The Python pane's line `number`, scrolled to first as a reader would if it waits in a template
    outside the window the page laid out (app/web/source_window.py)."""
    page.evaluate(
        """([section, number]) => {
          const block = Array.from(document.querySelectorAll(section + " .pl-defer")).find(
            (b) => number >= Number(b.dataset.start) && number < Number(b.dataset.start) + Number(b.dataset.count));
          if (block) block.scrollIntoView({ block: "center" });
        }""",
        [section, number],
    )
    line = page.locator(f'{section} .pl[data-l="{number}"]')
    expect(line).to_be_attached()
    return line


def test_step_through_passes_with_the_keyboard(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["compilation"])
    expect(page.locator("tr.pass")).to_have_count(80)
    ready(page)
    page.keyboard.press("j")
    expect(page.locator("tr.pass.cursor")).to_have_attribute("id", "s0")
    page.keyboard.press("Enter")
    expect(page).to_have_url(snapshot_url(matmul, 0))
    for key, index in (("j", 1), ("j", 2), ("k", 1), ("n", 2), ("p", 1)):
        ready(page)
        page.keyboard.press(key)
        expect(page).to_have_url(snapshot_url(matmul, index))
    ready(page)
    expect(page.locator("h1.pass-title")).to_have_text("CanonicalizerPass")
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    assert page_errors == []


def test_clicking_an_ir_line_highlights_its_python_line_and_back(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["snapshot"])
    ready(page)
    copy = page.locator(".ln", has_text="ttng.async_tma_copy_global_to_local").first
    python_line = copy.get_attribute("data-py").split(":")[1]
    copy.locator(".gtr").click()
    source_line = page.locator(f'.src-file:not([hidden]) .pl[data-l="{python_line}"]')
    expect(source_line).to_have_class(re.compile(r"\bsel\b"))
    expect(source_line).to_contain_text("_desc.load(")
    expect(source_line).to_be_in_viewport()
    every_pass = page.locator("#every-pass")
    expect(every_pass).to_be_visible()
    expect(every_pass).to_have_attribute("href", re.compile(rf"/map\?file=.*kernels\.py&line={python_line}$"))
    # and back: a Python line marks every IR line it became
    pane_line(page, ".src-file:not([hidden])", 118).click()  # c_desc.store(...)
    hits = page.locator(".ln.hit")
    expect(hits.first).to_be_visible()
    count = hits.count()
    assert count == page.locator('.ln[data-py="0:118"]').count() > 0
    assert all(hits.nth(i).get_attribute("data-py") == "0:118" for i in range(count))
    every_pass.click()
    expect(page).to_have_url(re.compile(r"/map\?file=.*&line=118$"))
    expect(page.locator("h1")).to_contain_text("kernels.py:118 in every pass")
    assert page_errors == []


def test_the_python_pane_lays_out_a_window_and_fills_the_rest_as_needed(matmul, browser_page, page_errors):
    from app.web.source_window import AFTER, BEFORE

    page = browser_page
    page.goto(matmul["snapshot"])
    ready(page)
    pane = page.locator(".src-file:not([hidden]) .src")
    first = int(pane.get_attribute("data-first"))
    expect(pane.locator(f'.pl[data-l="{first}"]')).to_be_in_viewport()
    blocks = pane.locator(".pl-defer")
    assert blocks.count() > 0 and pane.locator(".pl").count() <= BEFORE + AFTER
    last_block = blocks.last
    last = int(last_block.get_attribute("data-start")) + int(last_block.get_attribute("data-count")) - 1
    # scrolling the pane to its end fills in what it passes, and the lines stay where they were
    top = pane.locator(f'.pl[data-l="{first}"]').evaluate("e => e.offsetTop")
    pane.evaluate("e => { e.scrollTop = e.scrollHeight; }")
    expect(pane.locator(f'.pl[data-l="{last}"]')).to_be_in_viewport()
    assert pane.locator(f'.pl[data-l="{first}"]').evaluate("e => e.offsetTop") == top
    pane.evaluate("e => { e.scrollTop = 0; }")
    expect(pane.locator('.pl[data-l="1"]')).to_be_in_viewport()
    # an IR line mapped to a line still in a template: sm90_mix's kernels map within the window,
    # so one IR line is pointed further down, as a kernel calling a helper defined below would be
    page.reload()
    ready(page)
    assert pane.locator(f'.pl[data-l="{last}"]').count() == 0
    row = page.locator(".ln[data-py]").first
    row.evaluate(f"e => {{ e.dataset.py = '0:{last}'; }}")
    row.locator(".gtr").click()
    selected = pane.locator(f'.pl[data-l="{last}"]')
    expect(selected).to_have_class(re.compile(r"\bsel\b"))
    expect(selected).to_be_in_viewport()
    # the browser's find sees every line: Ctrl+F lays out what is left first
    assert pane.locator(".pl-defer").count() > 0
    page.keyboard.press("Control+f")
    expect(pane.locator(".pl-defer")).to_have_count(0)
    expect(pane.locator(".pl")).to_have_count(last)
    assert page_errors == []


def test_hovering_a_layout_alias_explains_it(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["snapshot"])
    ready(page)
    tip = page.locator("#tip")
    expect(tip).to_be_hidden()
    page.locator('.ir a.ly[data-ly="mma"]:not(.def)').first.hover()
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("#mma")
    expect(tip).to_contain_text("Hopper wgmma")
    expect(tip.locator("dt", has_text="instrShape")).to_be_visible()
    expect(tip).to_contain_text("warps are arranged")
    page.mouse.move(5, 600)
    expect(tip).to_be_hidden()
    # the alias's legend chip jumps to its definition line (a click on a use in a tensor type opens
    # the layout inspector instead: tests/browser/test_layout_browser.py)
    page.locator('.ly-chip[data-ly="mma"]').click()
    definition = page.locator(".ln.sel")
    expect(definition).to_have_count(1)
    expect(definition).to_contain_text("#mma = #ttg.nvidia_mma<")
    assert page_errors == []


def test_a_line_range_link_opens_with_those_lines_highlighted(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["snapshot"] + "#L100-L102")
    ready(page)
    selected = page.locator(".ln.sel")
    expect(selected).to_have_count(3)
    assert [selected.nth(i).get_attribute("id") for i in range(3)] == ["L100", "L101", "L102"]
    expect(page.locator("#L100")).to_be_in_viewport()
    # a click on a line number, then a shift-click, makes a new range link
    page.locator("#L20 a.nr").click()
    page.locator("#L23 a.nr").click(modifiers=["Shift"])
    expect(page).to_have_url(re.compile(r"#L20-L23$"))
    selected = page.locator(".ln.sel")
    expect(selected).to_have_count(4)
    assert [selected.nth(i).get_attribute("id") for i in range(4)] == ["L20", "L21", "L22", "L23"]
    assert page_errors == []


def test_locations_toggle_with_l_and_ops_filter_by_group(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["snapshot"])
    ready(page)
    location = page.locator(".ir .lc").first
    expect(location).to_be_hidden()
    expect(page.locator(".ln.locdef").first).to_be_hidden()
    page.keyboard.press("l")
    expect(location).to_be_visible()
    expect(page.locator(".ln.locdef").first).to_be_attached()
    page.reload()
    ready(page)
    expect(page.locator(".ir .lc").first).to_be_visible()  # remembered
    page.keyboard.press("l")
    expect(page.locator(".ir .lc").first).to_be_hidden()

    page.locator('.hw-chip[data-group="tma"]').click()
    expect(page.locator('.hw-chip[data-group="tma"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".fold").first).to_be_visible()
    visible = page.locator(".ir .ln:visible")
    count = visible.count()
    assert count > 0 and all("o-tma" in (visible.nth(i).get_attribute("class") or "") for i in range(count))
    page.keyboard.press("Escape")
    expect(page.locator(".fold")).to_have_count(0)
    assert page_errors == []


def test_a_deep_link_into_a_later_part_of_a_long_snapshot_loads_and_highlights_it(matmul, browser_page, page_errors):
    page = browser_page
    detail = httpx.get(matmul["compilation"] + ".json", timeout=60).json()
    longest = max(detail["snapshots"], key=lambda snapshot: snapshot["lines"])
    url = matmul["compilation"].rsplit("/runs/", 1)[0] + longest["url"]
    from app.render import PAGE_LINES

    target = 3 * PAGE_LINES + 5  # parts right below the first one load ahead of the scroll
    assert longest["lines"] > target + 10
    page.goto(f"{url}#L{target}-L{target + 2}")
    ready(page)
    selected = page.locator(".ln.sel")
    expect(selected).to_have_count(3)
    assert [selected.nth(i).get_attribute("id") for i in range(3)] == [f"L{target + i}" for i in range(3)]
    expect(page.locator(f"#L{target}")).to_be_in_viewport()
    # a Python line marks its IR lines in the later part too, once loaded
    key = page.locator(f"#L{target}").get_attribute("data-py")
    if key:
        page.goto(url)
        ready(page)
        expect(page.locator(f"#L{target}")).to_have_count(0)  # not loaded yet
        file, number = key.split(":")
        pane_line(page, f'.src-file[data-file="{file}"]', int(number)).dispatch_event("click")
        # the click scrolls to the line's first IR line once its part is loaded: wait for that, or
        # that scroll would land after the one below and take the later part out of range again
        expect(page.locator(".ln.hit").first).to_be_in_viewport()
        page.evaluate(f"document.querySelector('.part[data-start=\"{3 * PAGE_LINES}\"]').scrollIntoView()")
        expect(page.locator(f"#L{target}")).to_have_class(re.compile(r"\bhit\b"))
    assert page_errors == []
