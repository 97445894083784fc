"""Uploading through the home page in Chromium, against a real server."""

from __future__ import annotations

import base64
import re

from playwright.sync_api import expect

from tests.browser.conftest import upload_via_api
from tests.conftest import FIXTURES, corpus_archive

RUN_URL = re.compile(r"/runs/[0-9a-f]{32}$")
# Records every state the upload form goes through, in sessionStorage, which survives the
# navigation to the run page.
RECORD_STATES = """
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("upload-form");
  if (!form) return;
  new MutationObserver(() => {
    const states = JSON.parse(sessionStorage.getItem("upload-states") || "[]");
    if (states[states.length - 1] !== form.dataset.state) states.push(form.dataset.state);
    sessionStorage.setItem("upload-states", JSON.stringify(states));
  }).observe(form, { attributes: true, attributeFilter: ["data-state"] });
});
"""


def test_upload_an_archive_from_the_home_page(server_url, browser_page, page_errors):
    archive = corpus_archive("sm90_llvm")
    page = browser_page
    page.add_init_script(RECORD_STATES)
    page.goto(server_url + "/")
    upload = page.locator("#upload-button")
    expect(upload).to_be_disabled()
    page.set_input_files("#file-input", str(archive))
    expect(page.locator("#picked")).to_contain_text("sm90_llvm.tar.xz")
    expect(upload).to_be_enabled()
    page.fill("#title-input", "uploaded from the browser")
    upload.click()
    page.wait_for_url(RUN_URL)

    states = page.evaluate("JSON.parse(sessionStorage.getItem('upload-states') || '[]')")
    assert states[-3:] == ["uploading", "ingesting", "done"], states
    expect(page.locator("h1")).to_have_text("uploaded from the browser")
    row = page.locator("#compilations-table tbody tr").filter(has_text="add_kernel")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("271")  # 76 MLIR + 2 pipeliner-internal + 193 LLVM pass dumps
    expect(row.locator(".chip.stage-llvm-ir")).to_be_visible()

    row.locator("a.row-link").click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f]{32}/c/1$"))
    expect(page.locator("main")).to_contain_text("add_kernel")
    assert page_errors == []


def test_dropped_files_are_uploaded_together(server_url, browser_page, page_errors):
    page = browser_page
    page.goto(server_url + "/")
    log = FIXTURES / "sm90_add_kernel_dump.log.gz"
    warning = FIXTURES / "python_warning_inductor.txt"
    drop = page.evaluate_handle(
        """([log, warning]) => {
          const transfer = new DataTransfer();
          const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
          transfer.items.add(new File([bytes(log)], "sm90_add_kernel_dump.log.gz"));
          transfer.items.add(new File([bytes(warning)], "python_warning_inductor.txt"));
          return transfer;
        }""",
        [_b64(log.read_bytes()), _b64(warning.read_bytes())],
    )
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": drop})
    expect(page.locator("#picked li")).to_have_count(2)
    expect(page.locator("#upload-button")).to_have_text("Upload 2 files")
    page.click("#upload-button")
    page.wait_for_url(RUN_URL)
    expect(page.locator("#compilations-table")).to_contain_text("add_kernel")
    expect(page.locator("#logs")).to_contain_text("UserWarning: Converting a tensor")
    assert page_errors == []


def test_a_refused_upload_shows_the_error_and_stays(server_url, browser_page, tmp_path, page_errors):
    empty = tmp_path / "dump.log"
    empty.write_bytes(b"")
    page = browser_page
    page.goto(server_url + "/")
    page.set_input_files("#file-input", str(empty))
    page.click("#upload-button")
    error = page.locator("#upload-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("every file in it has zero bytes")
    assert page.url == server_url + "/"
    expect(page.locator("#upload-button")).to_be_enabled()
    assert page_errors == []


def test_the_form_works_without_javascript(server_url, browser_page):
    context = browser_page.context.browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(server_url + "/")
        page.set_input_files("#file-input", str(FIXTURES / "sm90_add_kernel_dump.log.gz"))
        page.fill("#title-input", "no javascript")
        page.click("#upload-button")
        page.wait_for_url(RUN_URL)
        expect(page.locator("h1")).to_have_text("no javascript")
        expect(page.locator("#compilations-table")).to_contain_text("add_kernel")
    finally:
        context.close()


def test_runs_uploaded_through_the_api_are_listed_on_the_home_page(server_url, browser_page):
    run = upload_via_api(server_url, FIXTURES / "sm90_add_kernel_dump.log.gz", title="listed run")
    page = browser_page
    page.goto(server_url + "/")
    link = page.locator(f'a.run-title[href="{run["url"]}"]')
    expect(link).to_have_text("listed run")
    link.click()
    page.wait_for_url(re.compile(re.escape(run["url"]) + "$"))
    expect(page.locator("#compilations-table")).to_contain_text("add_kernel")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
