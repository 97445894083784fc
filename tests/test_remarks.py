"""The compiler's remarks at their ops, from real Triton 3.9 output (tests/fixtures/remarks/, made by
make_remarks.py with MLIR_ENABLE_DIAGNOSTICS=remarks and MLIR_ENABLE_DUMP=1 on CPU; see its README):
each remark, warning and note sits at the pass that printed it, on the line of the op its loc names,
listed by pass on the compilation page, in the compilation JSON, and found by `remark:` searches."""

from __future__ import annotations

import html
import lzma
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.ingest.capture import capture_environment
from app.settings import Settings
from app.store.db import Database
from app.urls import Urls
from app.web.app import create_app
from parsers.logs.diagnostics import parse_gap
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

REMARKS = FIXTURES / "remarks"
LOG = REMARKS / "remarks_sm90_triton39.log.xz"


def log_text() -> str:
    with lzma.open(LOG, "rt") as f:
        return f.read()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remarks")
    folder = tmp / "capture"
    folder.mkdir()
    shutil.copy(LOG, folder / LOG.name)
    shutil.copy(REMARKS / "remark_kernels.py", folder / "remark_kernels.py")
    url = fresh_db_url(tmp)
    database = Database(url)
    try:
        run = ingest_paths(database, [folder])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp))) as client:
        yield client, run


def get_json(client: TestClient, url: str) -> dict:
    response = client.get(Urls().json(url))
    assert response.status_code == 200, response.text
    return response.json()


def compilation(run: dict, kernel: str) -> dict:
    return next(c for c in run["compilations"] if c["kernel"] == kernel)


def logged_remarks() -> list:
    """The fixture's MLIR diagnostics as parsers/logs/diagnostics.py reads them (the reference: the log)."""
    lines = log_text().splitlines()
    found = [record for record in parse_gap(list(enumerate(lines, 1)))
             if getattr(record, "kind", None) == "mlir"]
    return [d for d in found if d.severity in ("remark", "warning", "note")]


def header_before(line: int) -> str:
    """The last 'IR Dump Before X' header above a log line: the pass running when it was printed."""
    lines = log_text().splitlines()
    for text in reversed(lines[:line - 1]):
        m = re.match(r"// -----// IR Dump Before (\w+)", text)
        if m:
            return m.group(1)
    raise AssertionError("no dump above")


def test_each_remark_is_placed_at_the_pass_that_printed_it(site):
    client, run = site
    found = []
    for kernel in ("carried_loop_kernel", "fp8_matmul_kernel"):
        detail = get_json(client, compilation(run, kernel)["url"])
        found += detail["remarks"]
        for remark in detail["remarks"]:
            assert set(remark) >= {"message", "severity", "file", "line", "pass", "snapshot"}
            assert remark["pass"] == header_before(remark["log_line"])
            snapshot = get_json(client, remark["snapshot"])
            assert snapshot["pass"] == remark["pass"]
    logged = logged_remarks()
    assert len(found) == len(logged) == 5
    assert {(r["severity"], r["message"], r["line"]) for r in found} == {(d.severity, d.message, d.line) for d in logged}
    passes = {r["pass"] for r in found}
    assert passes == {"TritonGPUPipeline", "TritonGPUAccelerateMatmul", "ConvertTritonGPUToLLVM"}


def test_a_remark_shows_on_its_ops_line_in_that_snapshot(site):
    client, run = site
    detail = get_json(client, compilation(run, "carried_loop_kernel")["url"])
    (remark,) = detail["remarks"]
    assert "Pipelining will be disabled" in remark["message"]
    snapshot = get_json(client, remark["snapshot"])
    (placed,) = snapshot["remarks"]
    lines = snapshot["text"].splitlines()
    # the op the loc points at (remark_kernels.py:37:13, `v = tl.load(p)`) is a tt.load
    assert placed["ir_lines"] and all("tt.load" in lines[n - 1] for n in placed["ir_lines"])
    assert all(snapshot["locs"][n - 1]["line"] == 37 for n in placed["ir_lines"])
    page = client.get(remark["snapshot"]).text
    assert 'id="remark-legend"' in page and f'data-remark-lines="{",".join(map(str, placed["ir_lines"]))}"' in page
    assert html.escape("warning: operation scheduled before its operands.") in page
    # the next snapshot is another pass's: the remark is not repeated there
    after = get_json(client, snapshot["next_url"])
    assert after["remarks"] == []


def test_the_fp8_operand_warning_sits_on_the_dot(site):
    client, run = site
    detail = get_json(client, compilation(run, "fp8_matmul_kernel")["url"])
    warning = next(r for r in detail["remarks"] if "pipelined load for this operand will be disabled" in r["message"])
    assert warning["pass"] == "TritonGPUAccelerateMatmul" and warning["severity"] == "warning"
    snapshot = get_json(client, warning["snapshot"])
    placed = next(r for r in snapshot["remarks"] if r["log_line"] == warning["log_line"])
    lines = snapshot["text"].splitlines()
    assert placed["ir_lines"] and all("tt.dot" in lines[n - 1] for n in placed["ir_lines"])


def test_compilation_page_lists_remarks_by_pass(site):
    client, run = site
    page = client.get(compilation(run, "fp8_matmul_kernel")["url"]).text
    assert 'id="remarks"' in page
    section = page[page.index('id="remarks"'):page.index('id="diagnostics"')]
    assert section.index("TritonGPUAccelerateMatmul") < section.index("ConvertTritonGPUToLLVM")
    assert section.count('class="remark"') == 4
    assert "remark-badge" in page  # the pass rows say which passes spoke


def test_remark_search_finds_the_pipeliner(site):
    client, run = site
    found = get_json(client, Urls().search("remark:pipelin"))
    (hit,) = [r for r in found["remarks"] if "Pipelining" in r["message"]]
    assert hit["kernel"] == "carried_loop_kernel" and hit["pass"] == "TritonGPUPipeline"
    assert hit["snapshot"] == get_json(client, compilation(run, "carried_loop_kernel")["url"])["remarks"][0]["snapshot"]
    assert get_json(client, Urls().search("remark:vectorization kernel:fp8"))["count"] == 3
    assert get_json(client, Urls().search("remark:vectorization kernel:carried"))["count"] == 0
    nothing = get_json(client, Urls().search("remark:nosuchthing"))
    assert nothing["count"] == 0 and nothing["suggestions"]
    page = client.get(Urls().search("remark:pipelin")).text
    assert 'id="remark-results"' in page
    suggested = get_json(client, "/search/suggest?q=remark:pipel")["suggestions"]
    assert suggested and all(s["kind"] == "remark" for s in suggested)


def test_capture_remarks_turns_on_mlir_remarks(tmp_path: Path):
    env = capture_environment({}, tmp_path, llvm=False, timing=False, remarks=True)
    assert env["MLIR_ENABLE_DIAGNOSTICS"] == "remarks" and env["MLIR_ENABLE_DUMP"] == "1"
    assert "MLIR_ENABLE_DIAGNOSTICS" not in capture_environment({}, tmp_path, llvm=False, timing=False)


def test_remarks_without_the_source_still_belong_to_their_compilation(tmp_path: Path):
    """A capture uploaded without its Python files: the remarks printed between a compilation's dumps
    are still that compilation's, and still placed at their passes."""
    log = tmp_path / "remarks.log"
    log.write_text(log_text())
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [log])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        pipeliner = get_json(client, compilation(run, "carried_loop_kernel")["url"])["remarks"]
        matmul = get_json(client, compilation(run, "fp8_matmul_kernel")["url"])["remarks"]
    assert [r["pass"] for r in pipeliner] == ["TritonGPUPipeline"]
    assert [r["pass"] for r in matmul] == ["TritonGPUAccelerateMatmul"] + ["ConvertTritonGPUToLLVM"] * 3
