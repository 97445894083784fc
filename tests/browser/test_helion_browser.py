"""The snapshot page of a real Helion kernel (tests/fixtures/helion/) in Chromium: the Python pane opens
on the Helion file, and a click on a Helion line marks every IR line of the generated code it became."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from tests.browser.conftest import upload_via_api
from tests.conftest import FIXTURES


def test_a_helion_line_marks_the_ir_of_the_code_generated_from_it(server_url, browser_page, page_errors):
    run = upload_via_api(server_url, FIXTURES / "helion" / "helion_h200_triton36.tar.xz")
    matmul = next(c for c in run["compilations"] if c["kernel"] == "_helion_matmul")
    detail = httpx.get(f"{server_url}{matmul['url']}.json", timeout=60).json()
    first = detail["snapshots"][0]
    page = browser_page
    page.goto(server_url + first["url"])
    expect(page.locator("[data-ready]")).to_have_count(1)
    tab = page.locator(".src-tabs a").first
    expect(tab).to_contain_text("helion_kernels.py")
    pane = page.locator(".src-file:not([hidden])")
    addmm = pane.locator(".pl", has_text="torch.addmm(")
    expect(addmm).to_have_class(re.compile(r"\bmapped\b"))
    keys = addmm.get_attribute("data-keys").split(" ")
    assert keys and all(re.fullmatch(r"\d+:\d+", key) for key in keys)
    addmm.click()
    hits = page.locator(".ln.hit")
    expect(hits.first).to_be_visible()
    marked = {hits.nth(i).get_attribute("data-py") for i in range(hits.count())}
    assert marked and marked <= set(keys)  # IR lines of the generated lines that came from this Helion line
    assert any("tt.dot" in hits.nth(i).inner_text() for i in range(hits.count()))
    expect(page.locator("#every-pass")).to_have_attribute("href", re.compile(r"/map\?file=.*helion_kernels\.py&line=\d+$"))
    assert page_errors == []
