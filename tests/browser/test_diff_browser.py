"""The diff page in Chromium: step through changes with the keyboard, switch views, share the link."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.urls import snapshot_id
from tests.browser.conftest import upload_via_api
from tests.conftest import FIXTURES

LLVM = 72  # Before ConvertNVGPUToLLVM: four changes spread over 146 long LLVM-dialect lines


@pytest.fixture(scope="module")
def add_kernel_run(server_url) -> dict:
    return upload_via_api(server_url, FIXTURES / "sm90_add_kernel_dump.log.gz", title="diff browser test")


def diff_url(server_url: str, run: dict, a: int, b: int, query: str = "") -> str:
    url = f"{server_url}/diff/{snapshot_id(run['run'], 1, a)}..{snapshot_id(run['run'], 1, b)}"
    return url + (f"?{query}" if query else "")


def in_viewport(page: Page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => {
            const box = document.querySelector(selector).getBoundingClientRect();
            return box.top >= 0 && box.bottom <= window.innerHeight;
        }""",
        selector,
    )


def current_changes(page: Page) -> list[str]:
    return page.evaluate("[...new Set([...document.querySelectorAll('tr.cur')].map(r => r.dataset.c))]")


def test_step_through_changes_switch_view_and_share_the_link(
    server_url, add_kernel_run, browser_page, page_errors
):
    page = browser_page
    url = diff_url(server_url, add_kernel_run, LLVM, LLVM + 1, "context=all")
    total = httpx.get(url.replace("?", ".json?")).json()["stats"]["changes"]
    assert total >= 3
    page.goto(url)
    counter = page.locator(".change-count")
    expect(counter).to_have_text(f"{total} changes")
    expect(page.locator("tr.cur")).to_have_count(0)

    page.keyboard.press("n")
    expect(counter).to_have_text(f"change 1 of {total}")
    assert current_changes(page) == ["1"]
    assert in_viewport(page, "#c1")
    page.keyboard.press("n")
    page.keyboard.press("n")
    expect(counter).to_have_text(f"change 3 of {total}")
    assert current_changes(page) == ["3"]
    assert in_viewport(page, "#c3")
    assert page.evaluate("window.scrollY") > 0  # the third change is below the first screen
    page.keyboard.press("p")
    expect(counter).to_have_text(f"change 2 of {total}")
    assert page.url.endswith("#c2")
    page.keyboard.press("]")
    expect(counter).to_have_text(f"change 3 of {total}")

    # u switches to the unified view in place, keeping the selected change, and updates the URL
    page.keyboard.press("u")
    expect(page.locator("table.diff-table.unified")).to_be_visible()
    expect(counter).to_have_text(f"change 3 of {total}")
    assert current_changes(page) == ["3"]
    assert "view=unified" in page.url and page.url.endswith("#c3")
    assert in_viewport(page, "#c3")

    # a copied link opens the same view on the same change in a fresh page
    shared = page.url
    fresh = page.context.browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        fresh.goto(shared)
        expect(fresh.locator("table.diff-table.unified")).to_be_visible()
        expect(fresh.locator(".change-count")).to_have_text(f"change 3 of {total}")
        assert current_changes(fresh) == ["3"]
        assert in_viewport(fresh, "#c3")
    finally:
        fresh.close()

    page.keyboard.press("u")
    expect(page.locator("table.diff-table.split")).to_be_visible()
    assert "view=unified" not in page.url

    # j/k step to the next/previous pass's diff, d opens the B snapshot (as on the snapshot page)
    page.keyboard.press("j")
    page.wait_for_url(f"**/diff/*-{LLVM + 1}..*-{LLVM + 2}*")
    page.keyboard.press("k")
    page.wait_for_url(f"**/diff/*-{LLVM}..*-{LLVM + 1}*")
    page.keyboard.press("d")
    page.wait_for_url(f"**/s/{LLVM + 1}")
    assert page_errors == []


def test_toggles_and_expanding_collapsed_lines(server_url, add_kernel_run, browser_page, page_errors):
    page = browser_page
    page.goto(diff_url(server_url, add_kernel_run, LLVM, LLVM + 1, "context=1"))
    default_count = page.locator("#diff-page").get_attribute("data-changes")

    # ignoring SSA numbering is a reload of the page body, reflected in the URL
    page.locator(".chk[data-option='ssa']").click()
    expect(page.locator(".chk[data-option='ssa']")).to_have_attribute("aria-checked", "true")
    assert re.search(r"[?&]ssa=1", page.url)
    assert page.locator("#diff-page").get_attribute("data-changes") != default_count

    # expanding a collapsed run shows its lines in place
    rows_before = page.locator("tr.r").count()
    gap = page.locator("tbody.gap a.expand.all").first
    hidden = int(re.search(r"([\d,]+) unchanged", gap.inner_text()).group(1).replace(",", ""))
    gap.click()
    expect(page.locator("tr.r")).to_have_count(rows_before + hidden)
    assert page_errors == []


def test_rows_past_the_first_screens_load_as_they_scroll_into_view(
    server_url, add_kernel_run, browser_page, page_errors
):
    page = browser_page
    url = diff_url(server_url, add_kernel_run, LLVM, LLVM + 1, "context=all")
    served = httpx.get(url, headers={"Accept": "text/html"}).text
    # the page ships its first rows; the rest of the 146-line diff waits in a lazy body...
    assert served.count('<tbody class="lazy"') >= 1
    inline = served.count('<tr class="r ')
    page.goto(url)
    # ...the first of which loads with the page, the others as they scroll into view
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(page.locator("tbody.lazy")).to_have_count(0)
    assert page.locator("tr.r").count() > inline
    b_raw = httpx.get(f"{server_url}/runs/{add_kernel_run['run']}/c/1/s/{LLVM + 1}/raw").text
    expect(page.locator("tr.r").last).to_contain_text(str(len(b_raw.splitlines())))  # the last line
    assert page_errors == []
