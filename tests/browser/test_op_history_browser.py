"""Op history in Chromium: select an op in a snapshot, press h, read its life across passes, step
through the changes with the keyboard; and the per-pass charts link to snapshots."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import upload_via_api
from tests.conftest import corpus_archive


@pytest.fixture(scope="module")
def matmul(server_url):
    run = upload_via_api(server_url, corpus_archive("sm90_mix"))
    compilation = next(c for c in run["compilations"] if c["kernel"] == "matmul_descriptor_kernel")
    detail = httpx.get(f"{server_url}{compilation['url']}.json", timeout=60).json()
    accelerate = next(s for s in detail["snapshots"] if s["pass"] == "TritonGPUAccelerateMatmul")
    return {"compilation": server_url + compilation["url"], "snapshot": server_url + accelerate["url"],
            "index": accelerate["index"]}


def ready(page) -> None:
    expect(page.locator("[data-ready]")).to_have_count(1)


def test_h_on_a_selected_op_opens_its_history(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["snapshot"])
    ready(page)
    dot = page.locator(".ln", has_text=" = tt.dot ").first
    number = dot.get_attribute("id")[1:]
    dot.locator("a.nr").click()
    page.keyboard.press("h")
    expect(page).to_have_url(re.compile(rf"/history\?s={matmul['index']}&line={number}$"))
    expect(page.locator("h1")).to_have_text("tt.dot")
    rewrite = page.locator("tr.pass.ev-rewritten", has_text="TritonGPUAccelerateMatmul")
    expect(rewrite.first).to_be_visible()
    expect(rewrite.first).to_contain_text("ttng.warp_group_dot")
    expect(page.locator("tr.pass.quiet").first).to_be_hidden()  # only the passes that change it
    page.locator("#history-changes").uncheck()
    expect(page.locator("tr.pass.quiet").first).to_be_visible()
    page.locator("#history-changes").check()
    page.locator("h1").click()  # keys go to the page, not the checkbox
    page.keyboard.press("j")
    first = page.locator("tr.pass.cursor")
    expect(first).to_have_class(re.compile(r"ev-appears"))
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/s/\d+$"))
    twin = httpx.get(page.url.split("/s/")[0] + f"/history.json?s={matmul['index']}&line={number}", timeout=60).json()
    assert twin["picked"]["op"] == "tt.dot" and twin["events"] >= 3
    assert page_errors == []


def test_chart_points_link_to_their_snapshots(matmul, browser_page, page_errors):
    page = browser_page
    page.goto(matmul["compilation"])
    ready(page)
    lines = page.locator('tr.chart[data-key="lines"] svg.spark')
    expect(lines).to_be_visible()
    expect(page.locator("ul.outliers li").first).to_contain_text("ConvertTritonGPUToLLVM")
    expect(page.locator("tr.pass.outlier").first).to_be_visible()
    lines.locator("a").nth(3).click()
    expect(page).to_have_url(re.compile(r"/s/3$"))
    assert page_errors == []


def test_op_search_results_step_with_the_keyboard(matmul, server_url, browser_page, page_errors):
    page = browser_page
    page.goto(f"{server_url}/search?q=op:ttng.async_tma_copy_global_to_local")
    rows = page.locator("#op-results tr.pass")
    expect(rows.first).to_be_visible()
    ready(page)
    page.locator("h1").click()  # out of the search box, which has the focus
    page.keyboard.press("j")
    expect(rows.first).to_have_class(re.compile(r"\bcursor\b"))
    target = rows.first.get_attribute("data-url")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(target) + "$"))
    assert page_errors == []
