"""The compare page and the variants table in Chromium: pick two autotune configs, step through
diverging passes with j/k, preview a row's diff, unfold identical passes, share the link."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_via_api
from tests.conftest import corpus_archive


@pytest.fixture(scope="module")
def autotune_runs(server_url) -> tuple[dict, dict]:
    archive = corpus_archive("gpu_autotune")
    return (
        upload_via_api(server_url, archive, title="compare browser test"),
        upload_via_api(server_url, archive, title="compare browser test, again"),
    )


def selected_row(page: Page) -> str | None:
    return page.evaluate("(document.querySelector('tr.pair.cur') || {}).id || null")


def test_variants_table_picks_two_configs_and_keys_step_through_divergences(
    server_url, autotune_runs, browser_page, page_errors
):
    page = browser_page
    run = autotune_runs[0]
    page.goto(f"{server_url}/runs/{run['run']}")
    table = page.locator("#variants table.variants")
    expect(table).to_be_visible()
    matmuls = [c for c in run["compilations"] if c["kernel"] == "matmul_kernel"]
    expect(table.locator("tr.variant")).to_have_count(len(matmuls))
    # choose the second config as A and the fourth as B, then compare
    table.locator(f'input[name="a"][value="{run["run"]}-{matmuls[1]["id"]}"]').check()
    table.locator(f'input[name="b"][value="{run["run"]}-{matmuls[3]["id"]}"]').check()
    page.locator("#variants button[type=submit]").first.click()
    expected = f"/compare/{run['run']}-{matmuls[1]['id']}..{run['run']}-{matmuls[3]['id']}"
    page.wait_for_url(f"**{expected}")
    data = httpx.get(f"{server_url}{expected}.json").json()
    diverging = [k for k, row in enumerate(data["pairs"]) if not row["identical"]]
    assert len(diverging) >= 3
    expect(page.locator("tr.pair.diverging")).to_have_count(len(diverging))

    page.keyboard.press("j")
    assert selected_row(page) == f"r{diverging[0]}"
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert selected_row(page) == f"r{diverging[2]}"
    expect(page.locator(".div-count")).to_have_text(f"differing 3 of {len(diverging)}")
    page.keyboard.press("k")
    assert selected_row(page) == f"r{diverging[1]}"
    assert page.url.endswith(f"#r{diverging[1]}")

    # the status cells load as rows come into view: diff sizes, linking to the diff
    expect(page.locator(f"#r{diverging[0]} .row-status")).to_be_visible()
    # o previews the selected row's diff in place, with the diff page's row markup
    page.keyboard.press("o")
    preview = page.locator(".preview-row table.diff-table")
    expect(preview).to_be_visible()
    expect(preview.locator("tr.r.chg").first).to_be_visible()

    # the link, opened fresh, lands on the same row
    shared = page.url
    fresh = page.context.new_page()
    fresh.goto(shared)
    expect(fresh.locator(f"#r{diverging[1]}.cur")).to_be_visible()
    fresh.close()

    # d opens the selected row's diff
    page.keyboard.press("d")
    page.wait_for_url("**/diff/**")
    expect(page.locator("table.diff-table")).to_be_visible()
    assert page_errors == []


def test_identical_compilations_fold_away_and_unfold_in_place(server_url, autotune_runs, browser_page, page_errors):
    page = browser_page
    first, again = autotune_runs
    page.goto(f"{server_url}/compare/{first['run']}-1..{again['run']}-1")
    expect(page.locator(".first-divergence")).to_contain_text("No divergence")
    expect(page.locator("tbody.rows.folded")).to_be_hidden()
    page.locator("a.fold-open").first.click()
    expect(page.locator("tr.pair.same").first).to_be_visible()
    assert "/compare/" in page.url and "context=all" not in page.url  # unfolded in place, no reload
    # the Ignore toggles swap the page in place and keep the options in the URL
    page.locator('a.chk[data-option="ssa"]').click()
    page.wait_for_url("**ssa=1**")
    expect(page.locator('a.chk[data-option="ssa"]')).to_have_attribute("aria-checked", "true")
    assert page_errors == []


def test_first_pass_whose_effect_differs_links_to_its_row(server_url, autotune_runs, browser_page, page_errors):
    """Two autotune configs differ from their first dump; the summary's second line names the
    first pass that did something different, and its link selects that row."""
    page = browser_page
    run = autotune_runs[0]
    matmuls = [c["id"] for c in run["compilations"] if c["kernel"] == "matmul_kernel"]
    path = f"/compare/{run['run']}-{matmuls[0]}..{run['run']}-{matmuls[1]}"
    data = httpx.get(f"{server_url}{path}.json").json()
    found = data["summary"]["first_effect_divergence"]
    assert data["first_divergence"] == 0 and found["row"] > 0
    page.goto(f"{server_url}{path}")
    line = page.locator(".first-effect")
    expect(line).to_contain_text("First pass whose effect differs")
    line.locator(f'a[data-goto="{found["row"]}"]').click()
    assert selected_row(page) == f"r{found['row']}"
    expect(page.locator(f"#r{found['row']}")).to_be_visible()
    assert page_errors == []
