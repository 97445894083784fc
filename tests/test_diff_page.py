"""The diff page /diff/A..B and its .json twin, on the real add_kernel capture (78 dumps)."""

from __future__ import annotations

import gzip
import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.diff import apply_hunks, split_lines
from app.settings import Settings
from app.store.db import Database
from app.urls import snapshot_id
from app.web.app import create_app
from app.web.views import diff_rows
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

FIXTURE = FIXTURES / "sm90_add_kernel_dump.log.gz"
SCRIPT = "<script>alert(1)</script>"
TTGIR = 12  # Before TritonGPURemoveLayoutConversions
LLVM = 68  # Before CanonicalizeLLVMIR: 535 lines, rewritten to 146


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The capture ingested twice (two runs) plus a copy whose x_ptr name is a script tag."""
    tmp_path = tmp_path_factory.mktemp("diff-pages")
    hostile = tmp_path / "hostile_dump.log"
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as source:
        text = source.read()
    assert 'loc("x_ptr"' in text
    hostile.write_text(text.replace('loc("x_ptr"', f'loc("{SCRIPT}"'), encoding="utf-8")
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        runs = {
            "first": ingest_paths(database, [FIXTURE]),
            "second": ingest_paths(database, [FIXTURE]),
            "hostile": ingest_paths(database, [hostile]),
        }
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        yield client, runs


def sid(run: dict, index: int, ordinal: int = 1) -> str:
    return snapshot_id(run["run"], ordinal, index)


def diff_url(a: str, b: str, query: str = "") -> str:
    return f"/diff/{a}..{b}" + (f"?{query}" if query else "")


def json_of(client: TestClient, url: str) -> dict:
    path, _, query = url.partition("?")
    response = client.get(path + ".json" + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def page_of(client: TestClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert 'rel="alternate"; type="application/json"' in response.headers["link"]
    return response.text


def visible_text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


# --------------------------------------------------------------------------- page and twin


def test_page_and_json_show_the_same_diff(site):
    client, runs = site
    url = diff_url(sid(runs["first"], TTGIR), sid(runs["first"], TTGIR + 1))
    data = json_of(client, url)
    page = page_of(client, url)
    assert data["pass"] == "TritonGPURemoveLayoutConversions"
    assert data["a"]["pass"] == "TritonGPURemoveLayoutConversions" and data["b"]["index"] == TTGIR + 1
    assert data["a"]["url"] in page and data["b"]["url"] in page
    assert f'data-changes="{data["stats"]["changes"]}"' in page
    assert data["stats"]["hunks"] == len(data["hunks"]) > 0
    # every changed line of the JSON is on the page, in a changed row
    rows = re.findall(r'<tr class="r chg"[^>]*>(.*?)</tr>', page, re.DOTALL)
    shown = visible_text("\n".join(rows))
    for hunk in data["hunks"]:
        for line in hunk["lines"]:
            if line["op"] in ("delete", "replace"):
                assert line["a"] in shown
            if line["op"] in ("insert", "replace"):
                assert line["b"] in shown
    changed_rows = sum(1 for row in rows if 'class="n del"' in row or 'class="n ins"' in row)
    assert changed_rows > 0
    assert data["stats"]["removed"] + data["stats"]["changed_lines"] >= 1


def test_json_hunks_rebuild_the_second_snapshot(site):
    client, runs = site
    for a, b in ((TTGIR, TTGIR + 1), (LLVM, LLVM + 1), (0, 77)):
        url = diff_url(sid(runs["first"], a), sid(runs["first"], b), "loc=1&context=2")
        data = json_of(client, url)
        a_text = client.get(data["a"]["raw_url"]).text
        b_text = client.get(data["b"]["raw_url"]).text
        assert apply_hunks(split_lines(a_text), data["hunks"]) == split_lines(b_text)


def test_options_are_in_the_url_and_the_json(site):
    client, runs = site
    a, b = sid(runs["first"], LLVM), sid(runs["first"], LLVM + 1)
    data = json_of(client, diff_url(a, b, "ssa=1&alias=1&view=unified&context=3"))
    assert data["options"] == {"loc": False, "ssa": True, "alias": True, "context": 3, "view": "unified"}
    assert data["url"] == diff_url(a, b, "ssa=1&alias=1&context=3&view=unified")
    default = json_of(client, diff_url(a, b))
    assert default["options"] == {"loc": False, "ssa": False, "alias": False, "context": 5, "view": "split"}
    # ignoring renumbering leaves fewer changed lines on this rewrite
    assert data["stats"]["changed_lines"] < default["stats"]["changed_lines"]
    page = page_of(client, diff_url(a, b, "ssa=1&view=unified"))
    assert 'class="diff-table unified"' in page
    # the toggles link to the same view with one option flipped
    assert f'href="{diff_url(a, b, "ssa=1")}"' in page  # back to split
    assert f'href="{diff_url(a, b, "view=unified")}"' in page  # ssa off
    assert f'href="{diff_url(a, b, "ssa=1&amp;alias=1&amp;view=unified")}"' in page


def test_adjacent_passes_link_to_their_neighbours(site):
    client, runs = site
    run = runs["first"]
    data = json_of(client, diff_url(sid(run, TTGIR), sid(run, TTGIR + 1), "ssa=1"))
    nav = data["navigation"]
    assert nav["adjacent"]
    assert nav["prev"]["url"] == diff_url(sid(run, TTGIR - 1), sid(run, TTGIR), "ssa=1")
    assert nav["next"]["url"] == diff_url(sid(run, TTGIR + 1), sid(run, TTGIR + 2), "ssa=1")
    assert data["swap_url"] == diff_url(sid(run, TTGIR + 1), sid(run, TTGIR), "ssa=1")
    first = json_of(client, diff_url(sid(run, 0), sid(run, 1)))["navigation"]
    assert first["prev"] is None and first["next"] is not None
    far = json_of(client, diff_url(sid(run, 0), sid(run, 5)))["navigation"]
    assert not far["adjacent"] and far["next"] is None


def test_identical_snapshots_say_so(site):
    client, runs = site
    url = diff_url(sid(runs["first"], 5), sid(runs["first"], 6))  # TritonReorderBroadcast changed nothing
    data = json_of(client, url)
    assert data["identical"] and data["hunks"] == [] and data["stats"]["changes"] == 0
    assert "No differences." in page_of(client, url)


def test_cross_run_diff(site):
    client, runs = site
    same = json_of(client, diff_url(sid(runs["first"], TTGIR), sid(runs["second"], TTGIR)))
    assert same["identical"]
    assert same["a"]["run"] == runs["first"]["run"] and same["b"]["run"] == runs["second"]["run"]
    assert not same["navigation"]["adjacent"]
    other = json_of(client, diff_url(sid(runs["first"], TTGIR), sid(runs["second"], TTGIR + 1)))
    assert (
        other["stats"]
        == json_of(client, diff_url(sid(runs["first"], TTGIR), sid(runs["first"], TTGIR + 1)))["stats"]
    )
    page = page_of(client, diff_url(sid(runs["first"], TTGIR), sid(runs["second"], TTGIR + 1)))
    assert "from different runs" in page


# --------------------------------------------------------------------------- errors and caching


@pytest.mark.parametrize(
    "path",
    [
        "/diff/nonsense",
        "/diff/a..b",
        "/diff/0123456789abcdef0123456789abcdef-1-0..0123456789abcdef0123456789abcdef-1-1",
    ],
)
def test_bad_ids_are_404_with_a_message(site, path):
    client, _ = site
    response = client.get(path)
    assert response.status_code == 404
    assert "Cannot show this diff" in response.text
    twin = client.get(path + ".json")
    assert twin.status_code == 404
    assert twin.json()["error"]


def test_a_missing_side_is_named(site):
    client, runs = site
    good, missing = sid(runs["first"], 3), sid(runs["first"], 999)
    response = client.get(diff_url(good, missing) + ".json")
    assert response.status_code == 404
    assert missing in response.json()["error"]
    response = client.get(diff_url(sid(runs["first"], 3, ordinal=7), good))
    assert response.status_code == 404 and "-7-3" in response.text


def test_if_none_match_gets_304(site):
    client, runs = site
    url = diff_url(sid(runs["first"], TTGIR), sid(runs["first"], TTGIR + 1))
    for variant in (
        url,
        url + "?view=unified",
        diff_url(sid(runs["first"], TTGIR), sid(runs["first"], TTGIR + 1)) + ".json",
    ):
        first = client.get(variant)
        tag = first.headers["etag"]
        again = client.get(variant, headers={"If-None-Match": tag})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == tag
    tags = {client.get(u).headers["etag"] for u in (url, url + "?view=unified", url + "?ssa=1")}
    assert len(tags) == 3
    assert client.get(url, headers={"HX-Request": "true"}).headers["etag"] not in tags


def test_htmx_requests_get_the_page_body_only(site):
    client, runs = site
    url = diff_url(sid(runs["first"], TTGIR), sid(runs["first"], TTGIR + 1), "view=unified")
    response = client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "<html" not in response.text and 'id="diff-page"' in response.text
    assert "HX-Request" in response.headers["vary"]


def test_collapsed_lines_expand_through_the_rows_fragment(site):
    client, runs = site
    url = diff_url(sid(runs["first"], LLVM), sid(runs["first"], LLVM + 1), "context=1")
    page = page_of(client, url)
    expand = re.search(r'class="expand all" href="([^"]+)"', page)
    assert expand
    fragment = client.get(html.unescape(expand.group(1)), headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert fragment.text.lstrip().startswith("<tbody")
    # followed without JavaScript, the same link is a page around those rows
    plain = page_of(client, html.unescape(expand.group(1)))
    assert "Back to the whole diff" in plain and plain.count('<tr class="r ') == fragment.text.count(
        '<tr class="r '
    )
    assert '<tr class="r eq"' in fragment.text or '<tr class="r ign"' in fragment.text
    # a partial expansion keeps the rest of the run collapsed
    start, end = map(int, re.search(r"start=(\d+)&end=(\d+)", html.unescape(expand.group(1))).groups())
    if end - start > 4:
        part = client.get(
            f"{url.split('?')[0]}/rows?context=1&start={start}&end={start + 2}"
            f"&gap_start={start}&gap_end={end}"
        )
        assert part.text.count('<tr class="r ') == 2 and 'class="gap"' in part.text


def test_big_diffs_load_later_rows_lazily(site, monkeypatch):
    client, runs = site
    monkeypatch.setattr(diff_rows, "INLINE_ROWS", 40)
    monkeypatch.setattr(diff_rows, "CHUNK_ROWS", 50)
    url = diff_url(sid(runs["first"], LLVM), sid(runs["first"], LLVM + 1), "context=all&view=unified")
    page = page_of(client, url)
    lazy = re.findall(r'<tbody class="lazy" hx-get="([^"]+)" hx-trigger="([^"]+)"', page)
    assert len(lazy) >= 2
    assert "start=40&" in html.unescape(lazy[0][0])  # the inline budget ends the inline rows
    chunk = client.get(html.unescape(lazy[0][0]))
    assert chunk.status_code == 200 and chunk.text.count('<tr class="r ') >= 40
    # the chunk after the inline rows loads with the page; later ones when scrolled to
    assert [trigger.startswith("load,") for _, trigger in lazy] == [True] + [False] * (len(lazy) - 1)


# --------------------------------------------------------------------------- escaping


def test_ir_text_is_escaped(site):
    client, runs = site
    url = diff_url(sid(runs["first"], TTGIR), sid(runs["hostile"], TTGIR), "loc=1")
    response = client.get(url)
    assert response.status_code == 200
    assert SCRIPT not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text or "&lt;script&gt;alert" in response.text
    data = json_of(client, url)
    assert any(SCRIPT in (line["b"] or "") for hunk in data["hunks"] for line in hunk["lines"])
    # with locations ignored the two texts are the same, and nothing leaks either
    quiet = client.get(diff_url(sid(runs["first"], TTGIR), sid(runs["hostile"], TTGIR), "context=all"))
    assert SCRIPT not in quiet.text
    rows = client.get(
        diff_url(sid(runs["first"], TTGIR), sid(runs["hostile"], TTGIR)) + "/rows?start=0&end=40"
    )
    assert SCRIPT not in rows.text and "&lt;script&gt;" in rows.text


def test_base_url_prefixes_every_link(tmp_path: Path):
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [FIXTURE])
    finally:
        database.dispose()
    settings = Settings(db_url=url, load_demo=False, data_dir=tmp_path, base_url="/irlens")
    with TestClient(create_app(settings)) as client:
        page = client.get("/irlens" + diff_url(sid(run, TTGIR), sid(run, TTGIR + 1)))
        assert page.status_code == 200
        links = re.findall(r'(?:href|hx-get)="(/[^"]*)"', page.text)
        assert links and all(link.startswith("/irlens/") for link in links), [
            link for link in links if not link.startswith("/irlens/")
        ]


def test_a_cached_diff_follows_retitles_and_deletion(tmp_path: Path):
    """Diff pages are kept whole after their first render; a run's new title or its deletion still shows."""
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        first, second = ingest_paths(database, [FIXTURE]), ingest_paths(database, [FIXTURE])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        page = diff_url(sid(first, TTGIR), sid(second, TTGIR + 1))
        urls = [page, page.replace("?", ".json?") if "?" in page else page + ".json", page + "/rows?start=0&end=20"]
        before = {url: client.get(url) for url in urls}
        for url in urls:
            again = client.get(url)
            assert again.status_code == 200 and again.content == before[url].content
        assert client.patch(f"/runs/{second['run']}", json={"title": "fp8 <retitled>"}).status_code == 200
        retitled = client.get(page)
        assert "fp8 &lt;retitled&gt;" in retitled.text and retitled.headers["etag"] != before[page].headers["etag"]
        assert client.get(page).content == retitled.content
        assert client.delete(f"/runs/{first['run']}").status_code == 200
        for url in urls:
            assert client.get(url).status_code == 404
