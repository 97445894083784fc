"""The compilation, snapshot, cached-file and map pages, each with its .json twin, on real captures."""

from __future__ import annotations

import gzip
import html
import re
import tarfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.highlight.hwops import GROUPS
from app.settings import Settings
from app.store.db import Database
from app.urls import Urls, snapshot_id
from app.web.app import create_app
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths

SNAPSHOT_KEYS = {"index", "pass", "pass_arg", "kind", "scope", "changed", "id", "url", "raw_url"}
LINE_ID = re.compile(r'<div class="ln[^"]*" id="L(\d+)"')
PART = re.compile(r'class="part pending" data-start="(\d+)" data-count="(\d+)"')


def make_site(tmp_path: Path, paths: list[Path]):
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, paths)
    finally:
        database.dispose()
    client = TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path)))
    return client, run


@pytest.fixture(scope="module")
def sm90(tmp_path_factory):
    """sm90_mix ingested as shipped, served by a TestClient (lifespan running)."""
    client, run = make_site(tmp_path_factory.mktemp("pages"), [corpus_archive("sm90_mix")])
    with client:
        yield client, run


def compilation_of(run: dict, kernel: str) -> dict:
    return next(c for c in run["compilations"] if c["kernel"] == kernel)


def get_json(client: TestClient, url: str) -> dict:
    response = client.get(Urls().json(url))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def get_html(client: TestClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    json_url = Urls().json(url)
    assert f"<{json_url}>" in response.headers["link"]
    return response.text


# --------------------------------------------------------------------------- compilation


def test_compilation_page_and_its_json_list_the_same_passes(sm90):
    client, run = sm90
    url = compilation_of(run, "matmul_descriptor_kernel")["url"]
    data = get_json(client, url)
    page = get_html(client, url)
    snapshots = data["snapshots"]
    assert len(snapshots) == 80  # 78 MLIR dumps + 2 pipeliner-internal ones (corpus expected.json)
    assert len(re.findall(r'<tr class="pass[ "]', page)) == len(snapshots)
    for snapshot in snapshots:
        assert SNAPSHOT_KEYS <= set(snapshot)
        assert snapshot["id"] == snapshot_id(data["run"], data["id"], snapshot["index"])
        assert f'href="{snapshot["url"]}"' in page
        assert f'href="{snapshot["raw_url"]}"' in page
        assert set(snapshot["ops"]) == {group.key for group in GROUPS}
        if snapshot["index"]:
            previous = snapshot_id(data["run"], data["id"], snapshot["index"] - 1)
            assert snapshot["diff_prev_url"] == f"/diff/{previous}..{snapshot['id']}"
            assert f'href="{snapshot["diff_prev_url"]}"' in page
    unchanged = sum(1 for snapshot in snapshots if not snapshot["changed"])
    assert page.count('<tr class="pass unchanged"') == unchanged
    assert f"Hide {unchanged} unchanged" in page
    assert [stage["stage"] for stage in data["stages"]] == ["ttir", "ttgir", "llvm-dialect"]
    assert sum(stage["count"] for stage in data["stages"]) == len(snapshots)


def test_compilation_timeline_shows_which_pass_introduced_tma_ops(sm90):
    client, run = sm90
    url = compilation_of(run, "matmul_descriptor_kernel")["url"]
    data = get_json(client, url)
    snapshots = data["snapshots"]
    lowering = next(s for s in snapshots if s["pass"] == "TritonNvidiaGPUTMALoweringPass")
    after = snapshots[lowering["index"] + 1]
    assert after["ops"]["tma"] > lowering["ops"]["tma"]
    added = after["ops"]["tma"] - lowering["ops"]["tma"]
    page = get_html(client, url)
    assert (
        f"+{added} TMA ops vs #{lowering['index']}, so introduced by TritonNvidiaGPUTMALoweringPass" in page
    )
    # the add kernel has no TMA at all, so its timeline has no TMA column
    add_page = get_html(client, compilation_of(run, "add_kernel")["url"])
    assert "TMA ops" not in add_page and 'class="op-dot hw-tma"' not in add_page


def test_compilation_lists_cached_files_and_metadata(sm90):
    client, run = sm90
    url = compilation_of(run, "matmul_descriptor_kernel")["url"]
    data = get_json(client, url)
    kinds = [file["kind"] for file in data["files"]]
    assert kinds == ["source", "ttir", "ttgir", "llir", "ptx", "json", "grp", "cubin"]
    cubin = data["files"][-1]
    assert cubin["url"] is None and cubin["view_url"] is None
    page = get_html(client, url)
    for file in data["files"][:-1]:
        assert f'href="{file["view_url"]}"' in page
    assert data["metadata"]["num_warps"] == 8
    assert '<th class="mono">num_warps</th><td class="mono">8</td>' in page


# --------------------------------------------------------------------------- snapshot


def test_snapshot_page_and_its_json_show_the_same_ir(sm90):
    client, run = sm90
    compilation = get_json(client, compilation_of(run, "matmul_descriptor_kernel")["url"])
    snapshot = next(
        s
        for s in compilation["snapshots"]
        if s["pass"] == "TritonGPURemoveLayoutConversions" and s["index"] > 40
    )
    data = get_json(client, snapshot["url"])
    page = get_html(client, snapshot["url"])
    lines = data["text"].split("\n")
    assert [int(number) for number in LINE_ID.findall(page)] == list(range(1, len(lines) + 1))
    assert len(data["locs"]) == len(lines) == data["line_count"] == snapshot["lines"]
    # every located line's gutter shows its Python file:line
    for number, loc in enumerate(data["locs"], start=1):
        if loc is not None:
            row = re.search(rf'id="L{number}"[^>]*>.*?</div>', page).group(0)
            assert f">kernels.py:{loc['line']}</span>" in row
    assert data["source"] == "sm90_mix.tar.xz/sm90_mix/src/kernels.py"
    assert '<span class="nf">matmul_descriptor_kernel</span>' in page  # the Python pane
    for alias, layout in data["layouts"].items():
        assert f'data-ly="{alias}"' in page and f'<template id="ly-{alias}">' in page
        assert html.escape(layout["summary"], quote=False) in page
    assert data["ops"]["tma"] > 0 and 'data-group="tma"' in page
    assert data["prev_url"] == compilation["snapshots"][snapshot["index"] - 1]["url"]
    assert data["next_url"] == compilation["snapshots"][snapshot["index"] + 1]["url"]
    assert f'data-prev="{data["prev_url"]}"' in page and f'data-next="{data["next_url"]}"' in page
    assert f'data-diff="{snapshot["diff_prev_url"]}"' in page
    for key in SNAPSHOT_KEYS:
        assert data[key] == snapshot[key]


def test_raw_returns_the_ir_exactly_as_logged(sm90):
    client, run = sm90
    with tarfile.open(corpus_archive("sm90_mix")) as archive:
        log = archive.extractfile("sm90_mix/dump.log").read().split(b"\n")
    compilation = get_json(client, compilation_of(run, "matmul_descriptor_kernel")["url"])
    checked = 0
    for snapshot in compilation["snapshots"][::7] + compilation["snapshots"][-1:]:
        response = client.get(snapshot["raw_url"])
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        start = snapshot["log_line"]  # the banner's 1-based line: the body starts right after it
        assert response.content == b"\n".join(log[start : start + snapshot["lines"]])
        checked += 1
    assert checked >= 10


def test_snapshot_pages_answer_if_none_match_with_304(sm90):
    client, run = sm90
    compilation = get_json(client, compilation_of(run, "add_kernel")["url"])
    snapshot = compilation["snapshots"][20]
    first = client.get(snapshot["url"])
    tag = first.headers["etag"]
    assert tag.startswith(f'"{snapshot["blob"]}.')
    assert first.headers["cache-control"] == "private, max-age=0, must-revalidate"
    again = client.get(snapshot["url"], headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == tag
    twin = client.get(Urls().json(snapshot["url"]), headers={"If-None-Match": tag})
    assert twin.status_code == 200 and twin.headers["etag"] != tag  # the JSON is another representation
    assert client.get(snapshot["url"], headers={"If-None-Match": '"stale"'}).status_code == 200
    # an unchanged snapshot shares its blob, but not its page (other prev/next links)
    unchanged = next(s for s in compilation["snapshots"] if not s["changed"])
    same_blob = compilation["snapshots"][unchanged["index"] - 1]
    assert unchanged["blob"] == same_blob["blob"]
    assert client.get(unchanged["url"]).headers["etag"] != client.get(same_blob["url"]).headers["etag"]


def test_unknown_snapshots_and_files_are_404(sm90):
    client, run = sm90
    url = compilation_of(run, "add_kernel")["url"]
    assert client.get(url + "/s/9999").status_code == 404
    assert client.get(url + "/s/x").status_code == 404
    assert client.get(url + "/files/999999/view").status_code == 404
    other = compilation_of(run, "softmax_kernel")
    file_of_add = get_json(client, url)["files"][0]["url"]
    assert client.get(file_of_add.replace(url, other["url"]) + "/view").status_code == 404


# --------------------------------------------------------------------------- cached files


@pytest.mark.parametrize("kind", ["ttgir", "ptx", "llir", "json"])
def test_cached_files_are_viewable_highlighted_and_raw_stays_raw(sm90, kind):
    client, run = sm90
    files = get_json(client, compilation_of(run, "add_kernel")["url"])["files"]
    file = next(f for f in files if f["kind"] == kind)
    raw = client.get(file["url"])
    assert raw.status_code == 200 and len(raw.content) == file["size"]
    data = get_json(client, file["view_url"])
    assert data["text"].encode() == raw.content
    page = get_html(client, file["view_url"])
    assert int(LINE_ID.findall(page)[-1]) == data["line_count"]
    if kind in ("ttgir", "ptx", "llir"):
        assert any(loc and loc["file"].endswith("kernels.py") for loc in data["locs"])
        assert ">kernels.py:15</span>" in page  # pid = tl.program_id(axis=0)
    if kind == "json":
        assert data["line_count"] > raw.text.count("\n")  # pretty-printed for reading
    assert (
        client.get(
            file["view_url"], headers={"If-None-Match": client.get(file["view_url"]).headers["etag"]}
        ).status_code
        == 304
    )


# --------------------------------------------------------------------------- a Python line in every pass


def test_map_page_and_its_json_list_the_same_ir_lines(sm90):
    client, run = sm90
    compilation = compilation_of(run, "matmul_descriptor_kernel")
    with tarfile.open(corpus_archive("sm90_mix")) as archive:
        source = archive.extractfile("sm90_mix/src/kernels.py").read().decode().split("\n")
    line = next(number for number, text in enumerate(source, start=1) if "a = a_desc.load(" in text)
    file = "/home/dev/kernels/kernels.py"  # as recorded in the locations
    url = Urls().source_map(run["run"], compilation["id"], file, line)
    data = get_json(client, url)
    page = get_html(client, url)
    assert data["file"] == file and data["line"] == line
    assert data["source"] == "sm90_mix.tar.xz/sm90_mix/src/kernels.py"
    assert data["source_line"] == source[line - 1]
    assert len(data["snapshots"]) == 80
    with_lines = [row for row in data["snapshots"] if row["lines"]]
    assert len(with_lines) >= 70  # the pipeliner's internal dumps carry no locations
    for row in with_lines:
        for number in row["lines"][:40]:
            assert f'href="{row["url"]}#L{number}"' in page
    # in one pass, the map's lines are exactly that snapshot's lines located at file:line
    snapshot = get_json(client, compilation["url"] + "/s/44")
    row = next(row for row in data["snapshots"] if row["index"] == 44)
    assert row["lines"] == [
        n for n, loc in enumerate(snapshot["locs"], start=1) if loc and loc["line"] == line
    ]
    assert any(
        "ttng.async_tma_copy_global_to_local" in snapshot["text"].split("\n")[n - 1] for n in row["lines"]
    )
    # the file can be named by its base name too
    short = get_json(client, Urls().source_map(run["run"], compilation["id"], "kernels.py", line))
    assert [r["lines"] for r in short["snapshots"]] == [r["lines"] for r in data["snapshots"]]
    # a Python line no IR maps to
    empty = get_json(client, Urls().source_map(run["run"], compilation["id"], file, 1))
    assert not any(row["lines"] for row in empty["snapshots"])
    # the bare map page offers the files to pick from
    bare = get_json(client, compilation["url"] + "/map")
    assert bare["files"][0]["file"] == file and bare["snapshots"] == []
    assert '<select name="file">' in get_html(client, compilation["url"] + "/map")


# --------------------------------------------------------------------------- escaping, missing sources


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The add_kernel fixture log with a NameLoc renamed to an HTML payload; no Python source."""
    folder = tmp_path_factory.mktemp("hostile")
    text = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes()).decode()
    assert 'loc("x_ptr"' in text
    log = folder / "dump.log"
    log.write_text(text.replace('loc("x_ptr"', 'loc("<script>alert(1)</script>"'))
    client, run = make_site(folder, [log])
    with client:
        yield client, run


def test_ir_text_is_escaped_on_every_page(hostile):
    client, run = hostile
    compilation = get_json(client, run["compilations"][0]["url"])
    snapshot = compilation["snapshots"][0]
    data = get_json(client, snapshot["url"])
    assert '"<script>alert(1)</script>"' in data["text"]  # the JSON keeps the text as logged
    page = get_html(client, snapshot["url"])
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert client.get(snapshot["raw_url"]).text == data["text"]
    map_url = Urls().source_map(run["run"], 1, "/home/dev/kernels/kernels.py", 14)
    map_page = get_html(client, map_url)
    assert "<script>alert(1)" not in map_page and "&lt;script&gt;" in map_page


def test_missing_source_is_named_and_the_gutter_still_shows_file_and_line(hostile):
    client, run = hostile
    snapshot = get_json(client, run["compilations"][0]["url"])["snapshots"][10]
    data = get_json(client, snapshot["url"])
    assert data["source"] is None
    assert data["sources"] == [
        {
            "file": "/home/dev/kernels/kernels.py",
            "path": None,
            "lines": data["sources"][0]["lines"],
            "map_url": data["sources"][0]["map_url"],
        }
    ]
    page = get_html(client, snapshot["url"])
    assert 'source <strong class="mono">kernels.py</strong> not in the upload' in page
    assert ">kernels.py:15</span>" in page


# --------------------------------------------------------------------------- pass timings


def test_pass_times_come_from_timing_reports_matched_by_name_in_order(tmp_path):
    log = tmp_path / "timed.log"
    log.write_bytes(
        gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())
        + (FIXTURES / "timing_report_sm90.txt").read_bytes()
    )
    client, run = make_site(tmp_path, [log])
    with client:
        data = get_json(client, run["compilations"][0]["url"])
        page = get_html(client, run["compilations"][0]["url"])
    by_index = {s["index"]: s for s in data["snapshots"]}
    assert by_index[0]["pass"] == "InlinerPass" and by_index[0]["ms"] == 1.5
    assert by_index[1]["scope"].startswith("tt.func") and by_index[1]["ms"] == 0.9  # the nested 'tt.func' run
    coalesce = next(s for s in data["snapshots"] if s["pass"] == "TritonGPUCoalesceAsyncCopy")
    assert coalesce["ms"] == 3.7  # still aligned after a nested canonicalizer that has no row of its own
    internal = [s for s in data["snapshots"] if s["kind"] == "internal"]
    assert internal and all(s["ms"] is None for s in internal)
    assert sum(1 for s in data["snapshots"] if s["ms"] is not None) >= 70
    assert '<td class="num mono ms">1.50</td>' in page


# --------------------------------------------------------------------------- LLVM pass dumps


def test_llvm_function_dumps_borrow_the_module_debug_info(tmp_path):
    client, run = make_site(tmp_path, [corpus_archive("sm90_llvm")])
    with client:
        compilation = get_json(client, run["compilations"][0]["url"])
        llvm = [s for s in compilation["snapshots"] if s["kind"] == "llvm"]
        assert len(llvm) == 193
        function_dump = next(
            s
            for s in llvm
            if s["scope"] == "add_kernel" and "!DILocation(" not in client.get(s["raw_url"]).text
        )
        data = get_json(client, function_dump["url"])
        assert "!dbg !" in data["text"] and "!DILocation(" not in data["text"]
        located = [loc for loc in data["locs"] if loc]
        assert located and all(loc["file"] == "/home/dev/kernels/kernels.py" for loc in located)
        page = get_html(client, function_dump["url"])
        assert ">kernels.py:15</span>" in page  # ctaid.x: pid = tl.program_id(axis=0)


# --------------------------------------------------------------------------- paging and the response cache

TAGS = re.compile(r"<[^>]+>")


def largest_snapshot(client: TestClient, run: dict) -> dict:
    compilation = get_json(client, compilation_of(run, "matmul_descriptor_kernel")["url"])
    return max(compilation["snapshots"], key=lambda snapshot: snapshot["lines"])


def test_a_long_snapshot_pages_its_lines_and_a_fragment_returns_exactly_those_asked(sm90):
    from app.render import FIRST_LINES, PAGE_LINES

    client, run = sm90
    snapshot = largest_snapshot(client, run)
    assert snapshot["lines"] > PAGE_LINES + 100
    text_lines = get_json(client, snapshot["url"])["text"].split("\n")
    page = get_html(client, snapshot["url"])
    assert [int(n) for n in LINE_ID.findall(page)] == list(range(1, FIRST_LINES + 1))
    # the first part reaches the next page of markup; the others are a page each, the last one short
    first_later = f'{snapshot["url"]}/lines?start={FIRST_LINES}&amp;count={PAGE_LINES - FIRST_LINES}'
    assert f'data-url="{first_later}"' in page and f'href="{first_later}"' in page  # works without JS
    parts = [(int(start), int(count)) for start, count in PART.findall(page)]
    assert parts[0] == (FIRST_LINES, PAGE_LINES - FIRST_LINES) and parts[1][0] == PAGE_LINES
    assert all(start % PAGE_LINES == 0 and count == PAGE_LINES for start, count in parts[1:-1])
    assert parts[-1][0] + parts[-1][1] == snapshot["lines"]
    assert '<script type="application/json" id="ir-data">' in page
    for start, count in ((PAGE_LINES, PAGE_LINES), (PAGE_LINES - 2, 5), (snapshot["lines"] - 3, 100)):
        response = client.get(f"{snapshot['url']}/lines?start={start}&count={count}")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
        fragment = response.text
        numbers = [int(n) for n in LINE_ID.findall(fragment)]
        assert numbers == list(range(start + 1, min(start + count, snapshot["lines"]) + 1))
        rows = re.findall(r'<div class="ln[^"]*" id="L\d+"[^>]*>.*?</span></div>', fragment)
        assert len(rows) == len(numbers)
        for number, row in zip(numbers, rows):
            code = row.split('<span class="code">', 1)[1]
            assert html.unescape(TAGS.sub("", code)) == text_lines[number - 1]
    # every line on one page, for readers without JavaScript
    everything = get_html(client, snapshot["url"] + "?all=1")
    assert [int(n) for n in LINE_ID.findall(everything)] == list(range(1, snapshot["lines"] + 1))
    assert 'class="part pending"' not in everything
    assert client.get(f"{snapshot['url']}/lines?start=-1").status_code == 422


PY_ROW = re.compile(r'<div class="pl[^"]*" data-l="(\d+)"><span class="nr">\d+</span><span class="cnt">\d*</span>'
                    r'<span class="code">(.*?)</span></div>')
DEFERRED = re.compile(r'<div class="pl-defer" data-start="(\d+)" data-count="(\d+)"[^>]*><template>(.*?)</template></div>')


def test_a_long_python_file_lays_out_a_window_and_keeps_every_other_line_in_templates(sm90):
    from app.web import source_window

    client, run = sm90
    snapshot = largest_snapshot(client, run)
    with tarfile.open(corpus_archive("sm90_mix")) as tar:
        source = tar.extractfile("sm90_mix/src/kernels.py").read().decode()
    source_lines = source.splitlines()
    assert len(source_lines) > source_window.WHOLE  # long enough to be windowed
    page = get_html(client, snapshot["url"])
    pane = page[page.index('<div class="src" data-first="'):page.index('<form class="map-form"')]
    first = int(re.search(r'data-first="(\d+)"', pane).group(1))
    deferred = [(int(start), int(count), rows) for start, count, rows in DEFERRED.findall(pane)]
    live = [int(n) for n, _ in PY_ROW.findall(DEFERRED.sub("", pane))]
    # the window holds the first mapped line; each template holds exactly the lines it says
    assert first in live and live == list(range(live[0], live[-1] + 1))
    assert len(live) <= source_window.BEFORE + source_window.AFTER
    for start, count, rows in deferred:
        assert [int(n) for n, _ in PY_ROW.findall(rows)] == list(range(start, start + count))
        assert count <= source_window.BLOCK
    # every line once, in order, with its text (highlighted, escaped)
    numbers = [int(n) for n, _ in PY_ROW.findall(pane)]
    assert numbers == list(range(1, len(source_lines) + 1))
    for number, code in PY_ROW.findall(pane):
        assert html.unescape(TAGS.sub("", code)) == source_lines[int(number) - 1]
    # ?all=1 lays out every line, for readers without JavaScript
    everything = get_html(client, snapshot["url"] + "?all=1")
    assert "pl-defer" not in everything
    assert [int(n) for n, _ in PY_ROW.findall(everything)] == numbers


def test_a_lines_fragment_is_escaped(hostile):
    client, run = hostile
    snapshot = get_json(client, run["compilations"][0]["url"])["snapshots"][0]
    fragment = client.get(f"{snapshot['url']}/lines?start=0&count=10000").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in fragment and "<script>" not in fragment


def test_a_cached_page_is_the_page_as_first_rendered(sm90, tmp_path):
    client, run = sm90
    snapshot = largest_snapshot(client, run)
    urls = [snapshot["url"], snapshot["url"] + "?loc=1", Urls().json(snapshot["url"]), snapshot["url"] + "/lines?start=1500&count=1500"]
    first = {url: client.get(url) for url in urls}
    for url in urls:
        again = client.get(url, headers={"Accept-Encoding": "gzip"})
        assert again.status_code == 200
        assert again.content == first[url].content
        assert again.headers["etag"] == first[url].headers["etag"]
        assert again.headers["content-type"] == first[url].headers["content-type"]
        assert again.headers["content-encoding"] == "gzip" and "Accept-Encoding" in again.headers["vary"]
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers and plain.content == first[url].content
        assert client.get(url, headers={"If-None-Match": first[url].headers["etag"]}).status_code == 304
    # another app (cold caches) on the same database renders the same bytes
    other = TestClient(create_app(client.app.state.settings))
    with other:
        for url in urls:
            assert other.get(url).content == first[url].content


def test_a_deleted_runs_cached_pages_are_404(tmp_path):
    client, run = make_site(tmp_path, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
    with client:
        snapshot = get_json(client, run["compilations"][0]["url"])["snapshots"][3]
        urls = [snapshot["url"], Urls().json(snapshot["url"]), snapshot["url"] + "/lines?start=0&count=20"]
        for url in urls:
            assert client.get(url).status_code == 200
            assert client.get(url).status_code == 200  # now from the response cache
        assert client.delete(f"/runs/{run['run']}").status_code == 200
        for url in urls:
            assert client.get(url).status_code == 404


def test_a_run_deleted_by_another_worker_is_404_once_the_recheck_time_passes(tmp_path, monkeypatch):
    """Another worker process deletes the run: nothing tells this one, whose cached pages trust their
    last lookup for RECHECK_SECONDS and then look again."""
    from app.store.retention import _delete_rows
    from app.web import page_cache

    client, run = make_site(tmp_path, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
    with client:
        url = get_json(client, run["compilations"][0]["url"])["snapshots"][3]["url"]
        assert client.get(url).status_code == 200
        assert client.get(url).status_code == 200  # cached, and its run's lookup remembered
        database = Database(client.app.state.settings.db_url)
        try:
            with database.session() as session:  # as another process would: no forget_runs here
                _delete_rows(session, run["run"])
                session.commit()
        finally:
            database.dispose()
        monkeypatch.setattr(page_cache, "RECHECK_SECONDS", 3600.0)
        assert client.get(url).status_code == 200  # within the recheck time: the cached page
        monkeypatch.setattr(page_cache, "RECHECK_SECONDS", 0.0)
        assert client.get(url).status_code == 404


def test_a_cached_page_is_answered_before_routing(tmp_path, monkeypatch):
    """A repeat GET of a cached page is answered by the page cache's middleware, without a database
    session or the view; once its runs' lookup is stale it looks them up again, with a session."""
    from app.web import page_cache
    from app.web.views import ir_page

    client, run = make_site(tmp_path, [FIXTURES / "sm90_add_kernel_dump.log.gz"])
    with client:
        url = get_json(client, run["compilations"][0]["url"])["snapshots"][3]["url"]
        first = client.get(url)
        calls = []
        view_lookup = ir_page.cached_response
        monkeypatch.setattr(ir_page, "cached_response", lambda *a: calls.append(a) or view_lookup(*a))
        monkeypatch.setattr(page_cache, "RECHECK_SECONDS", 3600.0)
        again = client.get(url)
        assert again.status_code == 200 and again.content == first.content
        assert again.headers["etag"] == first.headers["etag"] and calls == []
        assert client.get(url + "?x=1").status_code == 200 and len(calls) == 1  # another key: the view
        monkeypatch.setattr(page_cache, "RECHECK_SECONDS", 0.0)
        sessions = []
        real = client.app.state.db.session
        monkeypatch.setattr(client.app.state.db, "session", lambda: sessions.append(1) or real())
        assert client.get(url).content == first.content and sessions == [1] and len(calls) == 1
