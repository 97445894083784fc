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
