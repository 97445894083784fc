"""`irlens upload` against a real server: uvicorn in a subprocess, tokens required, streamed multipart."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.cli.multipart import MultipartUpload
from bench.server import serve
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url

FIXTURE_LOG = FIXTURES / "sm90_add_kernel_dump.log.gz"
IRLENS = [sys.executable, "-m", "app.cli"]


def irlens(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*IRLENS, *args], capture_output=True, text=True, env=env, check=False, timeout=300)


class Server:
    def __init__(self, url: str, db_url: str) -> None:
        self.url, self.db_url = url, db_url


@pytest.fixture(params=["", "/irlens"], ids=["root", "base-url"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """`irlens serve` on a free port, tokens required; with base-url, under /irlens as behind a proxy."""
    db_url = fresh_db_url(tmp_path)
    env = {"IRLENS_REQUIRE_TOKEN": "true", "IRLENS_BASE_URL": request.param}
    with serve(db_url, tmp_path / "data", env=env) as (url, _log):
        yield Server(url, db_url)


def make_token(server: Server, name: str) -> str:
    made = irlens("token", "create", name, "--db", server.db_url)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip().splitlines()[-1]


def test_upload_needs_a_token_and_records_its_name(server: Server):
    anonymous = irlens("upload", "--server", server.url, str(FIXTURE_LOG))
    assert anonymous.returncode == 2 and "needs a token" in anonymous.stderr
    forged = irlens("upload", "--server", server.url, "--token", "irl_forged", str(FIXTURE_LOG))
    assert forged.returncode == 2 and "refused the token" in forged.stderr

    token = make_token(server, "alice")
    uploaded = irlens(
        "upload", "--server", server.url, "--token", token, "--title", "from the CLI", "--tag", "cli",
        "--tag", "sm90", str(FIXTURE_LOG),
    )  # fmt: skip
    assert uploaded.returncode == 0, uploaded.stderr
    lines = uploaded.stdout.strip().splitlines()
    assert "add_kernel" in lines[0] and "76 mlir" in lines[0]
    run_id, _, link = lines[-1].removeprefix("run ").partition(": ")
    assert link == f"{server.url}/runs/{run_id}"
    run = httpx.get(link + ".json", timeout=10).json()  # unlisted, but the link opens it
    assert (run["owner"], run["title"], run["tags"], run["listed"]) == (
        "alice",
        "from the CLI",
        ["cli", "sm90"],
        False,
    )
    assert [c["kernel"] for c in run["compilations"]] == ["add_kernel"]
    home = httpx.get(f"{server.url}/index.json", timeout=10).json()
    assert run_id not in {listed["run"] for listed in home["runs"]}
    mine = httpx.get(f"{server.url}/index.json", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert run_id in {listed["run"] for listed in mine.json()["runs"]}


def test_upload_streams_folders_as_tar_and_keeps_their_tree(server: Server, tmp_path: Path):
    with tarfile.open(corpus_archive("sm90_nodump")) as archive:
        archive.extractall(tmp_path, filter="data")
    folder = tmp_path / "sm90_nodump"
    shutil.copy(FIXTURE_LOG, tmp_path / "add.log.gz")
    token = make_token(server, "bob")
    uploaded = irlens(
        "upload", "--server", server.url, "--token", token, "--listed", "--json",
        str(folder / "cache"), str(tmp_path / "add.log.gz"),
    )  # fmt: skip
    assert uploaded.returncode == 0, uploaded.stderr
    run = json.loads(uploaded.stdout)
    assert run["link"].startswith(server.url + "/runs/")
    assert run["owner"] == "bob" and run["listed"] is True
    by_kernel = {c["kernel"]: c for c in run["compilations"]}
    # The cache folder's entries kept their paths, so each was linked to its kernel.
    assert sorted(by_kernel) == ["add_kernel", "attention_fwd_kernel", "matmul_kernel"]
    assert by_kernel["add_kernel"]["snapshots"]["mlir"] == 76 and by_kernel["add_kernel"]["cache_match"]
    paths = [log["path"] for log in run["logs"]]
    cached = [path for path in paths if path.startswith("cache.tar/cache/")]
    assert sorted(set(paths) - set(cached)) == ["add.log"]  # the .gz is opened
    assert len({path.rsplit("/", 1)[0] for path in cached}) == 3  # one cache folder a kernel


def test_multipart_body_length_is_known_before_it_streams(tmp_path: Path):
    folder = tmp_path / "deep" / "cache"
    (folder / "xxx").mkdir(parents=True)
    long_name = "é" * 60 + ".ttgir"  # non-ASCII and over 100 bytes: needs a PAX header
    (folder / "xxx" / long_name).write_text("module {}\n")
    (folder / "empty.json").write_bytes(b"")
    (folder / "big.bin").write_bytes(os.urandom(3 * MultipartUpload.CHUNK + 5))
    body = MultipartUpload([("title", "t"), ("tag", "a")], [str(FIXTURE_LOG), str(folder)])
    seen: list[int] = []
    data = b"".join(body.stream(lambda _name, done: seen.append(done)))
    assert len(data) == body.length == seen[-1]
    assert body.files == 4
    assert data.endswith(f"--{body.boundary}--\r\n".encode())
    # The folder part is a well-formed tar holding the folder's files under its name.
    part = data.split(b'filename="cache.tar"\r\nContent-Type: application/octet-stream\r\n\r\n', 1)[1]
    with tarfile.open(fileobj=io.BytesIO(part)) as archive:
        names = sorted(member.name for member in archive.getmembers())
        assert names == sorted(["cache/big.bin", "cache/empty.json", f"cache/xxx/{long_name}"])
        assert archive.extractfile(f"cache/xxx/{long_name}").read() == b"module {}\n"
