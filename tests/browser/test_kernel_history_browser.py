"""Kernel history in Chromium: from a run to its kernel's history across Triton versions, to a
flagged step, to the compare page of its two compilations; and the top bar's Kernels list."""

from __future__ import annotations

import re
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
    first = upload(server_url, HERE / "triton39.tar.gz", title="matmul, Triton 3.9", label="triton=3.9.0")
    run = upload(server_url, HERE / "triton31.tar.gz", title="matmul, Triton 3.1", label="triton=3.1.0")
    page.goto(f"{server_url}/runs/{run['run']}")
    expect(page.locator("dd.chips a.chip", has_text="triton=3.1.0")).to_be_visible()
    page.locator("a.history-link").first.click()
    page.wait_for_url("**/kernels/matmul_kernel")
    expect(page.locator("h1")).to_have_text("matmul_kernel")
    # the session's server holds other matmul_kernels (the corpus's): look at the series of these two runs
    history = httpx.get(f"{server_url}/kernels/matmul_kernel.json").json()
    ours = {first["run"], run["run"]}
    mine = [index for index, series in enumerate(history["series"])
            if ours & {point["run"] for point in series["points"]}]
    assert len(mine) == 2  # two configs, two series
    # each series: 3.9 then 3.1 in run order, and the spill change between them marked and linked
    steps = [next(f for f in history["series"][index]["flags"]
                  if f["metric"] == "spills" and (f["from_run"], f["to_run"]) == (first["run"], run["run"]))
             for index in mine]
    for index, step in zip(mine, steps, strict=True):
        assert step["direction"] == "worse"
        mark = f"#series-{index} svg.history-chart a.flag-mark.worse[data-metric=spills][href='{step['compare']}']"
        expect(page.locator(mark)).to_have_count(1)
    flag = steps[0]
    row = page.locator(f"#series-{mine[0]} tr.flag-row.worse").filter(has_text="spills").filter(
        has=page.locator(f"a.compare-link[href='{flag['compare']}']"))
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
    ours = page.locator("#kernels a.kernel-link").filter(has_text=re.compile(r"^matmul_kernel$"))
    expect(ours).to_have_count(1)
    # other tests' kernels may share the server: only names with "matmul" are listed
    assert all("matmul" in name for name in page.locator("#kernels a.kernel-link").all_inner_texts())
    expect(page.locator("#kernels svg.spark").first).to_be_visible()  # a series of several points draws one
    # in Triton version order, the same steps are improvements
    page.goto(f"{server_url}/kernels/matmul_kernel?order=label:triton")
    reordered = httpx.get(f"{server_url}/kernels/matmul_kernel.json?order=label:triton").json()
    found = 0
    for index, series in enumerate(reordered["series"]):
        for step in series["flags"]:
            # Triton 3.1 sorts first; the next point is a 3.9 run (ours, or the corpus's on a shared server)
            if step["metric"] == "spills" and step["from_run"] == run["run"]:
                assert step["direction"] == "better"
                expect(page.locator(f"#series-{index} a.flag-mark.better[data-metric=spills][href='{step['compare']}']")).to_have_count(1)
                found += 1
    assert found == 2  # both series, the step now an improvement
    assert page_errors == []
