"""Issue 11's "Done means" on a real Triton 3.8 capture uploaded as a user would (tests/fixtures/
triton38_fidelity.log.xz, 7 compiles with MLIR, LLVM and timing output; see its .note), checked by
tests/fidelity_check.py against the capture's manifest; the same checker runs on large local captures
(bench/NOTES.md has those figures)."""

from __future__ import annotations

import copy
import json
import lzma

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from tests.conftest import FIXTURES, form_token, fresh_db_url
from tests.fidelity_check import check_run, count_banners

LOG = FIXTURES / "triton38_fidelity.log.xz"
MANIFEST = json.loads((FIXTURES / "triton38_fidelity.manifest.json").read_text())
KERNELS = FIXTURES / "triton38_kernels.py"
AMD_LOG = FIXTURES / "triton38_fidelity_amd.log.xz"
AMD_MANIFEST = json.loads((FIXTURES / "triton38_fidelity_amd.manifest.json").read_text())


def _upload(tmp, fixture, sources):
    log = tmp / fixture.name.removesuffix(".xz")
    log.write_bytes(lzma.decompress(fixture.read_bytes()))
    settings = Settings(db_url=fresh_db_url(tmp), data_dir=tmp, load_demo=False)
    client = TestClient(create_app(settings))
    files = [("file", (path.name, path.read_bytes(), "application/octet-stream")) for path in (log, *sources)]
    response = client.post("/runs", files=files, data={"csrf_token": form_token(client)}, follow_redirects=False)
    assert response.status_code == 201, response.text
    return client, response.json(), str(log)


@pytest.fixture(scope="module")
def uploaded(tmp_path_factory):
    client, run, log = _upload(tmp_path_factory.mktemp("fidelity"), LOG, [KERNELS])
    with client:
        yield client, run, log


@pytest.fixture(scope="module")
def uploaded_amd(tmp_path_factory):
    sources = [KERNELS, FIXTURES / "triton38_more_kernels.py"]
    client, run, log = _upload(tmp_path_factory.mktemp("fidelity-amd"), AMD_LOG, sources)
    with client:
        yield client, run, log


def test_every_done_means_check_holds_on_the_capture(uploaded):
    client, run, log = uploaded
    report = check_run(client, run, log, MANIFEST)
    assert report.problems == []
    assert report.compiles == 7 and report.failed == 4
    assert report.banners == report.snapshots == {"mlir": 179, "internal": 2, "llvm": 739}
    assert report.damaged == 0 and report.llvm_bodies_checked == 739


def test_errors_right_after_a_machine_code_dump_start_the_next_compile(uploaded):
    # The hip compile fails before any dump; its diagnostics follow the cuda compile's last dump
    # (a machine-code one) with no banner between: they must not become part of that dump.
    _, run, log = uploaded
    first, second = run["compilations"][:2]
    assert (first["kernel"], first["status"]) == ("vector_add_kernel", "ok")
    assert (second["kernel"], second["target"], second["status"]) == ("copy_2d_kernel", None, "failed")
    assert second["status_reason"].startswith("Result 0 has an invalid layout")
    assert first["snapshots"] == count_banners(log, MANIFEST["compiles"][0]["log_start"],
                                               MANIFEST["compiles"][0]["log_end"])[0]
    assert run["diagnostics"] == [] and run["damaged"] == 0


def test_the_checker_reports_a_wrong_status(uploaded):
    client, run, log = uploaded
    manifest = copy.deepcopy(MANIFEST)
    manifest["compiles"][3]["signal"] = 0  # claim the tcgen05 compile on cuda:90 ended well ...
    wrong = copy.deepcopy(run)
    wrong["compilations"][3]["status"] = "ok"  # ... and that the run says so, without the LLVM ERROR seen
    problems = check_run(client, wrong, log, manifest).problems
    assert any(p.startswith("tmem cuda:90 (#4): status ok") for p in problems), problems


def test_amd_region_dumps_and_a_python_warning_between_compiles(uploaded_amd):
    # "Structurize control flow" prints a region's blocks (the entry block unlabelled), and the next
    # compile's UserWarning follows the last dump with no banner: neither is damage, every banner counts.
    client, run, log = uploaded_amd
    report = check_run(client, run, log, AMD_MANIFEST)
    assert report.problems == []
    assert report.banners == report.snapshots == {"mlir": 130, "internal": 0, "llvm": 604}
    snapshots = client.get(run["compilations"][0]["url"] + ".json").json()["snapshots"]
    regions = [s for s in snapshots if s["pass"] == "Structurize control flow" and s["scope_kind"] == "region"]
    assert regions, [s["scope"] for s in snapshots if s["pass"] == "Structurize control flow"]
    first_raw = client.get(regions[0]["raw_url"]).text
    assert first_raw.startswith("  ") and "UserWarning" not in first_raw
    assert not any("UserWarning" in client.get(s["raw_url"]).text for s in snapshots[-3:])
