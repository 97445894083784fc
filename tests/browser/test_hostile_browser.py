"""In Chromium, pages showing planted payloads run none of them and break no Content-Security-Policy rule.

tests/test_hostile_strings.py parses every page of the hostile run; this loads the main ones in a
real browser, hovers over each element that shows a payload (an injected onmouseover would fire),
and checks that nothing called PWN, no element a payload would add exists, and the browser reported
no CSP violation (our own pages must not need one either: a violation means inline code or style).
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests import hostile_capture as hostile
from tests.browser.conftest import upload_via_api

WATCH = """
window.__hits = [];
window.PWN = function () { window.__hits.push("PWN called"); };
document.addEventListener("securitypolicyviolation", function (event) {
  window.__hits.push("CSP: " + event.violatedDirective + " " + (event.sample || event.blockedURI));
});
"""
INJECTED = "img, iframe, object, embed, textarea, [onerror], [onload], [onmouseover], a[href^='javascript:']"


@pytest.fixture(scope="module")
def hostile_run(server_url, tmp_path_factory) -> dict:
    capture = hostile.hostile_capture(tmp_path_factory.mktemp("hostile-browser"))
    return upload_via_api(server_url, capture, title=hostile.TITLE)


def main_pages(server_url: str, run: dict) -> list[str]:
    compilation, cached = (c["url"] for c in run["compilations"])
    page = httpx.get(server_url + compilation).text
    diff = re.search(r'href="(/diff/[^"]+)"', page)
    files = httpx.get(f"{server_url}{cached}.json").json()["files"]
    return [
        "/",
        run["url"],
        compilation,
        compilation + "/s/1",
        compilation + "/s/1?loc=1",
        compilation + "/map",
        diff.group(1).replace("&amp;", "&") if diff else compilation,
        cached,
        files[0]["url"] + "/view",
        run["url"] + "/edit",
        "/search?q=" + hostile.SCRIPT,
        "/compare/{0}-{1}..{0}-{2}?context=all".format(run["run"], *(c["id"] for c in run["compilations"])),
    ]


def test_payloads_stay_inert_in_chromium(page, server_url, hostile_run, page_errors):
    page.context.add_init_script(WATCH)
    for path in main_pages(server_url, hostile_run):
        page.goto(server_url + path)
        page.wait_for_load_state("networkidle")
        shown = page.locator("xpath=//body//*[contains(text(), 'PWN')]")
        for index in range(min(shown.count(), 25)):
            element = shown.nth(index)
            if element.is_visible():
                element.hover(timeout=2_000)
        assert page.evaluate("window.__hits") == [], path
        assert page.locator(INJECTED).count() == 0, path
        assert "PWN" in page.content(), path  # the payloads are on the page, as text
    assert page_errors == []
