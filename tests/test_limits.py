"""Upload limits through HTTP: the body size (also for chunked uploads, with no Content-Length), the
expanded size and bomb ratio, the file count, archive nesting, hostile members and the ingest timeout.
Each refusal is a JSON error naming its limit, and stores nothing: no run, no blob."""

from __future__ import annotations

import gzip
import io
import json
import os
import select as io_select
import socket
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import zstandard
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.settings import Settings
from app.store.models import Blob, Run
from app.web.app import create_app
from bench.server import serve
from bench.stress import upload_bytes
from tests.conftest import FIXTURES, REPO, fresh_db_url

LOG = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())
JSON = {"Accept": "application/json"}


def _client(tmp_path: Path, **settings) -> TestClient:
    options = {"data_dir": tmp_path, "db_url": fresh_db_url(tmp_path), "load_demo": False, **settings}
    return TestClient(create_app(Settings(**options)))


def _stored(client: TestClient) -> tuple[int, int]:
    with client.app.state.db.session() as session:
        return session.scalar(select(func.count()).select_from(Run)), session.scalar(select(func.count()).select_from(Blob))


def _post(client: TestClient, name: str, data: bytes) -> httpx.Response:
    client.cookies.clear()  # an API client: no CSRF cookie
    return client.post("/runs", files={"file": (name, data)}, headers=JSON)


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _tiny_members(count: int) -> bytes:
    tiny = LOG[:40]
    return _tar([(tarfile.TarInfo(f"many/k{n:05d}.txt"), tiny) for n in range(count)], mode="w:gz")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with _client(tmp_path, max_files=10_000) as client:
        yield client


def test_ten_thousand_members_are_accepted_and_one_more_is_refused(client: TestClient) -> None:
    refused = _post(client, "many.tar.gz", _tiny_members(10_001))
    assert refused.status_code == 413
    assert refused.json()["error"] == "more than 10000 files in the inputs (max_files)"
    assert _stored(client) == (0, 0)
    accepted = _post(client, "many.tar.gz", _tiny_members(10_000))
    assert accepted.status_code == 201, accepted.text
    assert _stored(client)[0] == 1


def test_bombs_are_refused_with_413_and_store_nothing(client: TestClient) -> None:
    frame = zstandard.ZstdCompressor(level=19).compress(bytes(1 << 20))
    zstd_bomb = frame * 4096  # 4 GiB of zeros from about 200 KB
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_BZIP2) as archive, archive.open("zeros.log", "w") as member:
        for _ in range(256):
            member.write(bytes(1 << 20))
    for name, bomb, message in (
        ("dump.log.zst", zstd_bomb, "archive dump.log.zst looks like a decompression bomb"),
        ("bomb.zip", zipped.getvalue(), "archive bomb.zip looks like a decompression bomb: it declares 256.0 MB"),
    ):
        assert len(bomb) * 1000 < (256 << 20)
        response = _post(client, name, bomb)
        assert response.status_code == 413, response.text
        assert response.json()["error"].startswith(message) and response.json()["error"].endswith("max_ratio)")
        assert _stored(client) == (0, 0)


def test_expanded_size_limit_is_413_and_names_the_archive(tmp_path: Path) -> None:
    with _client(tmp_path, max_expanded_bytes=1 << 20) as client:
        response = _post(client, "big.log.gz", gzip.compress(LOG * 4))
        assert response.status_code == 413
        assert response.json()["error"] == "archive big.log.gz expands beyond the 1.0 MB limit (max_total_bytes)"
        assert _stored(client) == (0, 0)


def test_nesting_too_deep_is_a_clear_400(client: TestClient) -> None:
    onion = LOG
    for _ in range(40):
        onion = gzip.compress(onion, compresslevel=1)
    response = _post(client, "onion.log.gz", onion)
    assert response.status_code == 400
    assert response.json()["error"] == (
        "nothing in the upload can be ingested: onion.log: archive nested more than 3 levels deep (max_depth)"
    )
    assert _stored(client) == (0, 0)


def test_hostile_members_are_skipped_and_the_rest_is_stored(client: TestClient) -> None:
    def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        return info

    upload = _tar([
        (member("run/dump.log"), LOG),
        (member("../../etc/cron.d/evil"), LOG[:100]),
        (member("/etc/passwd"), LOG[:100]),
        (member("run/passwd", tarfile.SYMTYPE, "/etc/passwd"), None),
        (member("run/hard", tarfile.LNKTYPE, "run/dump.log"), None),
        (member("run/null", tarfile.CHRTYPE), None),
    ])
    response = _post(client, "evil.tar", upload)
    assert response.status_code == 201, response.text
    run = response.json()
    assert [(c["kernel"], c["snapshots"]["mlir"]) for c in run["compilations"]] == [("add_kernel", 76)]
    skipped = {w["path"]: w["message"] for w in run["warnings"] if w["message"].startswith("skipped")}
    assert skipped == {
        "evil.tar/../../etc/cron.d/evil": "skipped: path traversal (../..)",
        "evil.tar/etc/passwd": "skipped: absolute path",
        "evil.tar/run/passwd": "skipped: symlink",
        "evil.tar/run/hard": "skipped: hardlink",
        "evil.tar/run/null": "skipped: device or fifo",
    }


def test_ingest_timeout_applies_to_uploads_and_the_cli(tmp_path: Path) -> None:
    # A microsecond: the walker's first read is already late, without any real waiting.
    with _client(tmp_path, ingest_timeout_seconds=1e-6) as client:
        response = _post(client, "dump.log", LOG)
        assert response.status_code == 413
        assert response.json()["error"].startswith("the ingest took longer than the 1e-06 s limit")
        assert response.json()["error"].endswith("(ingest_timeout_seconds)")
        assert _stored(client) == (0, 0)
    log = tmp_path / "dump.log"
    log.write_bytes(LOG)
    env = {**os.environ, "IRLENS_INGEST_TIMEOUT_SECONDS": "1e-6", "IRLENS_DATA_DIR": str(tmp_path / "cli")}
    env.pop("IRLENS_DB_URL", None)
    done = subprocess.run([sys.executable, "-m", "app.cli", "ingest", "--db", fresh_db_url(tmp_path / "cli"),
                           str(log)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "(ingest_timeout_seconds)" in done.stderr and "Traceback" not in done.stderr


def test_form_fields_are_bounded_and_bad_multipart_is_a_json_400(client: TestClient) -> None:
    client.cookies.clear()
    huge_title = client.post("/runs", data={"title": "x" * (2 << 20)}, files={"file": ("dump.log", LOG)},
                             headers=JSON)
    assert huge_title.status_code == 400
    assert huge_title.json()["error"].startswith("malformed upload: Part exceeded maximum size")
    broken = client.post("/runs", content=b"--nope\r\n", headers={**JSON, "Content-Type": "multipart/form-data"})
    assert broken.status_code == 400 and "malformed upload" in broken.json()["error"]
    assert _stored(client) == (0, 0)


# -- a real server: chunked bodies have no Content-Length to check ------------------------------------------


def _chunked_body(boundary: str, megabytes: int) -> Iterator[bytes]:
    yield (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="dump.log"\r\n'
           "Content-Type: application/octet-stream\r\n\r\n").encode()
    block = (LOG * 3)[: 1 << 20]
    for _ in range(megabytes):
        yield block
    yield f"\r\n--{boundary}--\r\n".encode()


def _raw_chunked_post(url: str, boundary: str, megabytes: int) -> tuple[int, dict, int]:
    """POST a chunked body over a bare socket, a chunk at a time, stopping as soon as the server has
    answered: (status, JSON body, bytes of the body sent by then)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall((f"POST /runs HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: application/json\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n").encode())
        sent = 0
        for chunk in _chunked_body(boundary, megabytes):
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:  # the server closed the connection after answering
                break
            sent += len(chunk)
            if io_select.select([sock], [], [], 0.05)[0]:
                break  # the answer has come: stop sending
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            data = sock.recv(1 << 16)
            if not data:
                break
            answer += data
    head, body = answer.split(b"\r\n\r\n", 1)
    return int(head.split()[1]), json.loads(body[: _length(answer)]), sent


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1 << 30


def test_chunked_upload_past_the_limit_is_refused_while_it_streams(tmp_path: Path) -> None:
    db_url = fresh_db_url(tmp_path)
    with serve(db_url, tmp_path, env={"IRLENS_MAX_UPLOAD_BYTES": str(4 << 20)}) as (url, log_path):
        status, answer, sent = _raw_chunked_post(url, "b0undary", 64)
        message = "upload larger than 4194304 bytes (4 MiB, the max_upload_bytes setting)"
        assert (status, answer) == (413, {"error": message, "detail": message})
        # Answered as the body streamed, long before the client had sent its 64 MiB.
        assert sent < 32 << 20, sent
        headers = {**JSON, "Content-Type": "multipart/form-data; boundary=b0undary"}
        chunked = httpx.post(f"{url}/runs", content=_chunked_body("b0undary", 64), headers=headers, timeout=120)
        assert chunked.request.headers["transfer-encoding"] == "chunked"
        assert chunked.status_code == 413
        declared = httpx.post(f"{url}/runs", content=b"x" * ((4 << 20) + 1), headers=headers, timeout=60)
        assert declared.status_code == 413
        # The server is fine and stores a good upload (chunked too) whole.
        good = httpx.post(f"{url}/runs", files={"file": ("ok.log", upload_bytes("ok"))}, headers=JSON, timeout=60)
        assert good.status_code == 201, good.text
        small = httpx.post(f"{url}/runs", content=_chunked_body("b0undary", 2), headers=headers, timeout=60)
        assert small.status_code == 201, small.text
        runs = httpx.get(f"{url}/index.json", timeout=30).json()["runs"]
        assert sorted(run["run"] for run in runs) == sorted([good.json()["run"], small.json()["run"]])
        assert "Traceback" not in log_path.read_text()
