"""The diff page's "Re-run this pass" panel in Chromium, against a real server that holds Triton 3.9:
a click swaps in the replay's answer, which Triton itself gave."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from bench.server import serve
from tests.browser.conftest import upload_via_api
from tests.conftest import FIXTURES, fresh_db_url
from tests.test_replay import python_with


@pytest.fixture(scope="module")
def replay_server(tmp_path_factory):
    python = python_with("3.9")
    data_dir = tmp_path_factory.mktemp("replay-server")
    with serve(fresh_db_url(data_dir), data_dir, env={"IRLENS_REPLAY_PYTHONS": f"3={python}"}) as (url, _log):
        yield url


def test_rerun_this_pass_swaps_in_the_replay(replay_server, browser_page, page_errors):
    run = upload_via_api(replay_server, FIXTURES / "sm90_add_kernel_dump.log.gz")["run"]
    detail = httpx.get(f"{replay_server}/runs/{run}/c/1.json").json()
    coalesce = next(s for s in detail["snapshots"] if s["pass"] == "TritonGPUCoalesce")
    page = browser_page
    page.goto(f"{replay_server}/diff/{coalesce['id']}..{run}-1-{coalesce['index'] + 1}")
    panel = page.locator("#replay-panel")
    expect(panel).to_have_attribute("data-status", "unrun")
    panel.get_by_role("link", name="Re-run this pass").click()
    expect(panel).to_have_attribute("data-status", "same", timeout=60_000)
    expect(panel.locator(".badge")).to_have_text("same")
    expect(page).to_have_url(f"{replay_server}/diff/{coalesce['id']}..{run}-1-{coalesce['index'] + 1}")  # no navigation
    assert page_errors == []
