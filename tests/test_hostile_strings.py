"""Hostile strings in an upload come out inert on every page, and responses carry the security headers.

One real capture with payloads planted in the kernel name, a string attribute, loc() file paths,
warnings, the Python source, archive paths, cache metadata, the title and tags
(tests/hostile_capture.py). Every page reachable from its run is fetched and parsed: no event
handler, inline script, javascript: URL or foreign element may appear. The payloads must reach the
pages (escaped), or the test would prove nothing. tests/browser/test_hostile_browser.py checks the
same pages in Chromium.
"""

from __future__ import annotations

import html
import re
from collections import deque
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from app.web.security import SECURITY_HEADERS
from tests import hostile_capture as hostile
from tests.conftest import fresh_db_url

MAX_PAGES = 400


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    app = create_app(Settings(db_url=fresh_db_url(folder), data_dir=folder, load_demo=False))
    with TestClient(app) as client:
        capture = hostile.hostile_capture(folder)
        with capture.open("rb") as stream:
            response = client.post(
                "/runs",
                files=[("file", (capture.name, stream, "application/gzip"))],
                data={"title": hostile.TITLE, "tags": ",".join(hostile.TAGS)},
                headers={"Accept": "application/json"},
            )
        assert response.status_code == 201, response.text
        yield client, response.json()


def crawl(client: TestClient, run: dict) -> dict[str, str]:
    """Every HTML page reachable from the run's page (its own pages, diffs, comparisons, search): URL -> body."""
    start = [run["url"], "/", f"/search?q={hostile.SCRIPT}", run["url"] + "/edit"]
    start += [run["url"] + "/nope" + hostile.IMG, "/-/signin?next=" + hostile.JS_URL]
    ids = [f"{run['run']}-{c['id']}" for c in run["compilations"]]
    start += [f"/compare/{ids[0]}..{ids[-1]}", f"/compare/{ids[0]}..{ids[-1]}?context=all&ssa=1"]
    pages: dict[str, str] = {}
    queue = deque(start)
    while queue and len(pages) < MAX_PAGES:
        url = queue.popleft()
        if url in pages:
            continue
        response = client.get(url, headers={"Accept": "text/html"})  # as a browser: error pages too
        pages[url] = response.text if response.headers["content-type"].startswith("text/html") else ""
        for link in re.findall(r'(?:href|hx-get|data-url)="([^"]+)"', pages[url]):
            link = html.unescape(link).split("#")[0]
            if link.startswith((run["url"], "/diff/", "/compare/")) and not link.endswith((".json", "/raw")):
                queue.append(link)
    return pages


@pytest.fixture(scope="module")
def pages(site) -> dict[str, str]:
    client, run = site
    return crawl(client, run)


def test_no_page_lets_a_payload_run(pages):
    assert len(pages) > 40  # the run, 2 compilations, their snapshots, files, map, diffs
    problems = {url: found for url, body in pages.items() if (found := hostile.audit_html(body))}
    assert not problems


def test_every_payload_reaches_the_pages_escaped(pages):
    """Escaped, not dropped: each planted string is on some page, as text the reader can see."""
    shown = "\n".join(html.unescape(body) for body in pages.values())
    for payload in (*hostile.ALL, hostile.TITLE, hostile.SOURCE_DIR, "add_kernel<img_src=x_onerror=PWN"):
        assert payload in shown, payload
    for part in ("UserWarning: " + hostile.SCRIPT, "irlens.note", hostile.IMG.join(("3.9", ""))):
        assert part in shown, part


def test_json_twins_and_raw_texts_are_not_html(site):
    client, run = site
    compilation = run["compilations"][0]["url"]
    for url in (run["url"] + ".json", compilation + ".json", compilation + "/s/1.json", "/index.json"):
        response = client.get(url)
        assert response.headers["content-type"] == "application/json", url
        assert hostile.SCRIPT in response.text or "PWN" in response.text, url
    raw = client.get(compilation + "/s/1/raw")
    assert raw.headers["content-type"] == "text/plain; charset=utf-8"
    assert "PWN" in raw.text
    log = client.get(run["url"]).text
    [log_url] = set(re.findall(r'href="(/runs/[0-9a-f]+/log/\d+)"', log))
    assert client.get(log_url).headers["content-type"] == "text/plain; charset=utf-8"
    cache = run["compilations"][1]["url"]
    files = {file["kind"]: file["url"] for file in client.get(cache + ".json").json()["files"]}
    assert client.get(files["json"]).headers["content-type"] == "application/json"
    assert client.get(files["ttir"]).headers["content-type"] == "text/plain; charset=utf-8"


def test_every_response_carries_the_security_headers(site, tmp_path: Path):
    client, run = site
    responses = [
        client.get("/"),
        client.get(run["url"] + ".json"),
        client.get("/static/app.js"),
        client.get("/runs/" + "0" * 32),  # 404
        client.get(run["compilations"][0]["url"] + "/s/1/raw"),
        client.post("/runs", headers={"Origin": "https://evil.example"}),  # refused before the view
    ]
    for response in responses:
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (response.url, name)
    directives = dict(
        part.strip().split(" ", 1) for part in SECURITY_HEADERS["Content-Security-Policy"].split(";")
    )
    assert directives["script-src"] == directives["default-src"] == "'self'"  # no inline script, no eval
    assert directives["object-src"] == directives["base-uri"] == "'none'"
