"""Kernel history in Chromium: from a run to its kernel's history across Triton versions, to a
flagged step, to the compare page of its two compilations; and the top bar's Kernels list."""

from __future__ import annotations

from pathlib import Path

import httpx
from playwright.sync_api import expect

from tests.conftest import FIXTURES

HERE = FIXTURES / "kernel_history"


def upload(server_url: str, archive: Path, **fields: str) -> dict:
    with archive.open("rb") as stream:
        response = httpx.post(f"{server_url}/runs", files={"file": (archive.name, stream, "application/gzip")},
                              data=fields, headers={"Accept": "application/json"}, timeout=600)
    assert response.status_code == 201, response.text
    return response.json()


def test_run_to_kernel_history_to_flagged_step_to_compare(server_url, browser_page, page_errors):
    page = browser_page
    upload(server_url, HERE / "triton39.tar.gz", title="matmul, Triton 3.9", label="triton=3.9.0")
    run = upload(server_url, HERE / "triton31.tar.gz", title="matmul, Triton 3.1", label="triton=3.1.0")
    page.goto(f"{server_url}/runs/{run['run']}")
    expect(page.locator("dd.chips a.chip", has_text="triton=3.1.0")).to_be_visible()
    page.locator("a.history-link").first.click()
    page.wait_for_url("**/kernels/matmul_kernel")
    expect(page.locator("h1")).to_have_text("matmul_kernel")
    expect(page.locator("section.series")).to_have_count(2)  # two configs, two series
    # each series: 3.9 then 3.1 in run order, and the spill change between them marked and linked
    expect(page.locator("svg.history-chart a.flag-mark.worse[data-metric=spills]")).to_have_count(2)
    history = httpx.get(f"{server_url}/kernels/matmul_kernel.json").json()
    flag = next(f for f in history["series"][0]["flags"] if f["metric"] == "spills")
    row = page.locator("#series-0 tr.flag-row.worse").filter(has_text="spills")
    expect(row).to_have_count(1)
    expect(row.locator("td.num").first).to_have_text(str(flag["before"]))
    row.locator("a.compare-link").click()
    page.wait_for_url(f"**{flag['compare']}")
    expect(page.locator("body")).to_contain_text("spills")  # the compare page's why: B spills N B/thread
    # the top bar's Kernels link, and its search
    page.locator("header a.nav-link", has_text="Kernels").click()
    page.wait_for_url("**/kernels")
    page.get_by_role("searchbox", name="Search kernels by name").fill("matmul")
    page.locator("main form[role=search] button").click()
    expect(page.locator("#kernels a.kernel-link")).to_have_text(["matmul_kernel"])
    expect(page.locator("#kernels svg.spark")).to_have_count(1)
    # in Triton version order, the same steps are improvements
    page.goto(f"{server_url}/kernels/matmul_kernel?order=label:triton")
    expect(page.locator("svg.history-chart a.flag-mark.better[data-metric=spills]")).to_have_count(2)
    assert page_errors == []
