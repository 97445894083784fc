"""The home and run pages, their .json twins, and uploads through POST /runs, over a real app.

Uploads are real captures: the committed add_kernel fixture always, corpus archives when
../shared is present. Each app runs with its lifespan (`with TestClient(...)`).
"""

from __future__ import annotations

import gzip
import html
import re
import tarfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from tests.conftest import FIXTURES, corpus_archive, csrf_header, form_token, fresh_db_url

FIXTURE_LOG = FIXTURES / "sm90_add_kernel_dump.log.gz"
WARNING_LOG = FIXTURES / "python_warning_inductor.txt"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
RUN_KEYS = {
    "run",
    "url",
    "title",
    "created_at",
    "owner",
    "tags",
    "input_bytes",
    "compilations",
    "diagnostics",
    "damaged",
    "warnings",
}
COMPILATION_KEYS = {
    "id",
    "kernel",
    "target",
    "triton_version",
    "status",
    "status_reason",
    "snapshots",
    "changed",
    "artifacts",
    "num_warps",
    "num_stages",
    "num_ctas",
    "shared",
    "compile_seconds",
    "origin",
    "log",
    "cache",
    "cache_match",
    "url",
}


def make_client(tmp_path: Path, **settings) -> TestClient:
    return TestClient(
        create_app(Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False, **settings))
    )


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with make_client(tmp_path_factory.mktemp("web-pages")) as test_client:
        yield test_client


def upload(client: TestClient, *paths: Path, title: str = "", headers: dict | None = None):
    files = [("file", (path.name, path.read_bytes(), "application/octet-stream")) for path in paths]
    return client.post(
        "/runs",
        files=files,
        data={"csrf_token": form_token(client), **({"title": title} if title else {})},
        headers=headers or {},
        follow_redirects=False,
    )


@pytest.fixture(scope="module")
def fixture_run(client) -> dict:
    response = upload(client, FIXTURE_LOG, WARNING_LOG, title="add_kernel fixture")
    assert response.status_code == 201, response.text
    return response.json()


def visible_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_api_upload_answers_201_with_the_run_and_its_location(fixture_run, client):
    assert set(fixture_run) >= RUN_KEYS | {"logs"}
    assert fixture_run["title"] == "add_kernel fixture"
    [compilation] = fixture_run["compilations"]
    assert set(compilation) >= COMPILATION_KEYS
    assert (compilation["kernel"], compilation["snapshots"]) == (
        "add_kernel",
        {"mlir": 76, "internal": 2, "llvm": 0},
    )
    assert compilation["stages"] == ["ttir", "ttgir", "llvm-dialect"]
    again = upload(client, FIXTURE_LOG)
    assert again.status_code == 201
    assert again.headers["location"] == again.json()["url"]
    assert client.get(again.headers["location"]).status_code == 200


def test_corpus_archive_upload_gives_its_llvm_dumps(client):
    archive = corpus_archive("sm90_llvm")
    response = upload(client, archive)
    assert response.status_code == 201, response.text
    run = response.json()
    assert response.headers["location"] == run["url"]
    [compilation] = [c for c in run["compilations"] if c["origin"] == "log"]
    assert (compilation["kernel"], compilation["snapshots"]) == (
        "add_kernel",
        {"mlir": 76, "internal": 2, "llvm": 193},
    )
    assert compilation["stages"] == ["ttir", "ttgir", "llvm-dialect", "llvm-ir"]
    page = client.get(run["url"])
    assert page.status_code == 200
    assert "add_kernel" in page.text
    assert f'href="{compilation["url"]}"' in page.text
    assert ">271 " in page.text or ">271<" in page.text  # 76 + 2 + 193 passes
    assert "llvm-ir" in page.text


def test_folder_upload_keeps_relative_paths(client, tmp_path):
    """What the page sends for a dropped cache folder: one part per file, named by its relative path."""
    archive = corpus_archive("sm90_nodump")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "sm90_nodump"
    files = [
        ("file", (path.relative_to(root).as_posix(), path.read_bytes(), "application/octet-stream"))
        for path in sorted((root / "cache").rglob("*"))
        if path.is_file()
    ]
    response = client.post("/runs", files=files, data={"title": "a dropped cache folder", "csrf_token": form_token(client)})
    assert response.status_code == 201, response.text
    run = response.json()
    assert sorted(c["kernel"] for c in run["compilations"]) == [
        "add_kernel",
        "attention_fwd_kernel",
        "matmul_kernel",
    ]
    assert all(log["path"].startswith("cache/") for log in run["logs"])
    assert {c["origin"] for c in run["compilations"]} == {"cache"}


def test_run_page_and_its_json_twin_agree(client, fixture_run):
    url = fixture_run["url"]
    twin = client.get(url + ".json")
    assert twin.status_code == 200
    data = twin.json()
    assert data["compilations"] == fixture_run["compilations"]
    assert set(data) >= RUN_KEYS | {"logs"}
    page = client.get(url)
    assert page.headers["content-type"].startswith("text/html")
    assert f'<link rel="alternate" type="application/json" href="{url}.json">' in page.text
    assert page.headers["link"] == f'<{url}.json>; rel="alternate"; type="application/json"'
    text = visible_text(page.text)
    for compilation in data["compilations"]:
        counts = compilation["snapshots"]
        assert f'href="{compilation["url"]}"' in page.text
        assert compilation["kernel"] in text
        assert compilation["target"] in text
        assert str(counts["mlir"] + counts["internal"] + counts["llvm"]) in text
        assert str(compilation["changed"]) in text
    for log in data["logs"]:
        assert log["path"] in text
    assert f"Compilations {len(data['compilations'])}" in " ".join(text.split())


def test_home_page_and_its_json_twin_agree(client, fixture_run):
    data = client.get("/index.json").json()
    page = client.get("/")
    assert page.status_code == 200
    assert '<link rel="alternate" type="application/json" href="/index.json">' in page.text
    text = visible_text(page.text)
    listed = {run["run"]: run for run in data["runs"]}
    assert fixture_run["run"] in listed
    assert page.text.count('class="run-title"') == len(data["runs"])
    for run in data["runs"]:
        assert f'href="{run["url"]}"' in page.text
        assert run["run"] in text
        for kernel in run["kernels"]:
            assert kernel in text
    mine = listed[fixture_run["run"]]
    assert (mine["title"], mine["compilations"], mine["kernels"], mine["damaged"]) == (
        "add_kernel fixture",
        1,
        ["add_kernel"],
        0,
    )
    assert mine["created_at"].endswith("+00:00")


def test_run_json_lists_uploaded_files_and_serves_log_text(client, fixture_run):
    logs = {Path(log["path"]).name: log for log in fixture_run["logs"]}
    assert set(logs) == {FIXTURE_LOG.name.removesuffix(".gz"), WARNING_LOG.name}  # .gz opened as its content
    for log in logs.values():
        assert set(log) >= {"path", "size", "role", "note", "url"}
    warning = logs[WARNING_LOG.name]
    assert warning["role"] == "log" and warning["size"] == WARNING_LOG.stat().st_size
    response = client.get(warning["url"])
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert "UserWarning: Converting a tensor with requires_grad=True" in response.text
    page = client.get(fixture_run["url"]).text
    assert "UserWarning: Converting a tensor with requires_grad=True" in html.unescape(page)
    assert f'href="{warning["url"]}"' in page


def test_log_text_of_another_run_is_not_served(client, fixture_run):
    other = upload(client, WARNING_LOG).json()
    [log] = [log for log in other["logs"] if log["url"]]
    foreign = log["url"].replace(other["run"], fixture_run["run"])
    assert client.get(foreign).status_code == 404
    assert client.get(fixture_run["url"] + "/log/999999").status_code == 404
    assert client.get(fixture_run["url"] + "/log/abc").status_code == 404


def test_html_form_post_redirects_to_the_run_page(client):
    response = upload(client, FIXTURE_LOG, title="from a form", headers={"Accept": BROWSER_ACCEPT})
    assert response.status_code == 303
    run_url = response.headers["location"]
    assert re.fullmatch(r"/runs/[0-9a-f]{32}", run_url)
    page = client.get(run_url)
    assert page.status_code == 200 and "from a form" in page.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Accept": "*/*", "User-Agent": "curl/8.5.0"},
        {"Accept": BROWSER_ACCEPT, "User-Agent": "curl/8.5.0"},
        {"Accept": BROWSER_ACCEPT, "X-Requested-With": "XMLHttpRequest"},
        {"Accept": BROWSER_ACCEPT, "HX-Request": "true"},
        {"Accept": "application/json"},
        {"Accept": "text/html;q=0.5, application/json"},
    ],
    ids=["curl", "curl-html", "xhr", "htmx", "json", "json-preferred"],
)
def test_api_clients_get_json_not_a_redirect(client, headers):
    response = upload(client, FIXTURE_LOG, headers=headers)
    assert response.status_code == 201
    assert response.headers["location"] == response.json()["url"]


def test_empty_upload_is_refused_with_a_clear_message(client, tmp_path):
    no_file = client.post("/runs", data={"title": "nothing"}, headers=csrf_header(client))
    assert no_file.status_code == 400
    assert "no files" in no_file.json()["error"]
    blank_picker = client.post(
        "/runs", files=[("file", ("", b"", "application/octet-stream"))], data={"csrf_token": form_token(client)}
    )
    assert blank_picker.status_code == 400
    assert "no files" in blank_picker.json()["error"]
    empty = tmp_path / "dump.log"
    empty.write_bytes(b"")
    zero_bytes = upload(client, empty)
    assert zero_bytes.status_code == 400
    assert zero_bytes.json()["error"] == "the upload is empty: every file in it has zero bytes"


def test_empty_form_post_shows_the_error_on_the_home_page(client):
    response = client.post(
        "/runs",
        files=[("file", ("", b"", "application/octet-stream"))],
        data={"csrf_token": form_token(client)},
        headers={"Accept": BROWSER_ACCEPT},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
    assert "Upload failed" in response.text
    assert "no files: choose or drop at least one file" in response.text
    assert 'id="upload-form"' in response.text


def test_kernel_names_are_escaped_on_every_page(client, tmp_path):
    hostile = "<script>alert(1)</script>_kernel"
    log = gzip.decompress(FIXTURE_LOG.read_bytes()).replace(b"add_kernel", hostile.encode())
    path = tmp_path / "hostile.log"
    path.write_bytes(log)
    response = upload(client, path, title='<img src=x onerror="alert(2)">')
    assert response.status_code == 201, response.text
    run = response.json()
    # The dump headers name the kernel up to the "(": the stored name is "<script>alert".
    assert run["compilations"][0]["kernel"].startswith("<script>alert")
    for page in (client.get(run["url"]).text, client.get("/").text):
        assert "&lt;script&gt;alert" in page
        assert "<script>alert" not in page
        assert "<img src=x" not in page
        assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in page


def test_every_link_carries_the_base_url(tmp_path):
    with make_client(tmp_path, base_url="/irlens") as prefixed:
        run = upload(prefixed, FIXTURE_LOG, WARNING_LOG).json()
        assert run["url"].startswith("/irlens/runs/")
        for path in ("/", run["url"].removeprefix("/irlens")):
            page = prefixed.get(path).text
            links = re.findall(r'(?:href|src|action)="(/[^"]*)"', page)
            assert links, path
            assert all(link.startswith("/irlens/") for link in links), [
                link for link in links if not link.startswith("/irlens/")
            ]
        form_post = upload(prefixed, FIXTURE_LOG, headers={"Accept": BROWSER_ACCEPT})
        assert form_post.headers["location"].startswith("/irlens/runs/")


def test_unknown_run_is_404(client):
    assert client.get("/runs/0123456789abcdef0123456789abcdef").status_code == 404
    assert client.get("/runs/0123456789abcdef0123456789abcdef.json").status_code == 404
