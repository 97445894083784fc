"""Nsight Compute reports (`.ncu-rep`) through the optional ncu-report package (extra `irlens[ncu]`,
in the test extra): the report in tests/fixtures/gpu_runs/ncu.tar.xz gives, per kernel, the same
warp-state sample totals as the source page its own ncu exported as CSV, read here with csv.reader;
without the package an uploaded report is named in a warning that says which extra to install."""

from __future__ import annotations

import sys
import tarfile

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from parsers.profiles import ncu_rep
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths
from tests.test_profile_sass import _csv_kernels, _same

NCU = FIXTURES / "gpu_runs" / "ncu.tar.xz"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rep")
    with tarfile.open(NCU) as tar:
        (folder / "report.ncu-rep").write_bytes(tar.extractfile("ncu/report.ncu-rep").read())
    return folder / "report.ncu-rep"


def test_report_totals_match_the_csv_export(report):
    pytest.importorskip("ncu_report", reason="the ncu-report package is not installed (irlens[ncu])")
    parsed = ncu_rep.parse_report(str(report))
    csv_kernels = _csv_kernels()
    assert [k.name for k in parsed.kernels] == [k["name"] for k in csv_kernels]
    for kernel, expected in zip(parsed.kernels, csv_kernels, strict=True):
        # the source page's "Warp Stall Sampling (All Samples)" is smsp__pcsamp_sample_count
        assert kernel.totals["smsp__pcsamp_sample_count"] == expected["total"] > 0
        lines = sum(m.get("smsp__pcsamp_sample_count", 0) for m in kernel.lines.values())
        assert lines + kernel.unattributed.get("smsp__pcsamp_sample_count", 0) == expected["total"]
        # each instruction sits at the CSV's offset for it (same opcode)
        assert kernel.sass and all(_same(row.text) == _same(expected["texts"][row.offset]) for row in kernel.sass)


def test_without_the_package_a_report_gets_a_note_naming_the_extra(report, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # `import ncu_report` raises ImportError
    assert not ncu_rep.available()
    url = fresh_db_url(tmp_path)
    from app.store.db import Database

    database = Database(url)
    run = ingest_paths(database, [report])
    database.dispose()
    client = TestClient(create_app(Settings(db_url=url, load_demo=False), background=False))
    page = client.get(run["url"] + ".json").json()
    (warning,) = [w for w in page["warnings"] if (w.get("path") or "").endswith("report.ncu-rep")]
    assert "irlens[ncu]" in warning["message"] and "ncu-report" in warning["message"]
    assert page["profiles"] == []
    assert "irlens[ncu]" in client.get(run["url"]).text
