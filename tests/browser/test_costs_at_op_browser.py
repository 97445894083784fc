"""In a real browser: bank conflicts and the compiler's remarks at their ops (issue 36).

A real `irlens serve` gets the Gluon capture of tests/layout_cases/bank_demo.py and the remark
capture of tests/fixtures/remarks/ (both Triton 3.9 output) through POST /runs; Chromium opens the
snapshot pages and the inspector, and the notes must sit on the op lines the JSON names."""

from __future__ import annotations

import io
import lzma
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import upload_via_api
from tests.conftest import FIXTURES

pytest.importorskip("playwright")
from playwright.sync_api import expect

CASES = Path(__file__).resolve().parent.parent / "layout_cases"


def _bundle(tmp_path: Path, name: str, log: Path, source: Path) -> Path:
    with lzma.open(log, "rb") as f:
        data = f.read()
    path = tmp_path / name
    with tarfile.open(path, "w:gz") as archive:
        for member, body in (("dump.log", data), (source.name, source.read_bytes())):
            info = tarfile.TarInfo(member)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return path


def test_a_conflicting_store_is_noted_on_its_line_and_drawn(server_url, browser_page, page_errors, tmp_path):
    run = upload_via_api(server_url, _bundle(tmp_path, "bank.tar.gz", CASES / "staged_transpose_sm90_triton39.log.xz",
                                             CASES / "bank_demo.py"))
    (compilation,) = run["compilations"]
    detail = httpx.get(server_url + compilation["url"] + ".json", timeout=60).json()
    snap = next(s for s in detail["snapshots"] if s["bank_conflicts"].get("with_conflicts"))
    body = httpx.get(server_url + snap["url"] + ".json", timeout=60).json()
    conflicted = next(a for a in body["shared_accesses"] if a["bank_conflicts"])
    page = browser_page
    page.goto(server_url + snap["url"])
    line = page.locator(f"#L{conflicted['line']}")
    expect(line).to_have_attribute("data-bank", conflicted["note"])
    expect(line).to_have_attribute("data-bank-bad", "1")
    note = line.evaluate("el => getComputedStyle(el, '::after').content")
    assert f"{conflicted['bank_conflicts']} bank conflicts" in note
    legend = page.locator("#bank-legend")
    expect(legend).to_contain_text("1 of 4 with bank conflicts")
    legend.locator("summary").click()
    legend.locator(f"li[data-bank-line='{conflicted['line']}'] a", has_text="draw").click()
    expect(page.locator("#bank-conflicts")).to_contain_text(f"{conflicted['bank_conflicts']} bank conflicts")
    rows = page.locator(".bank-grid tbody tr")
    expect(rows).to_have_count(conflicted["wavefronts"])
    assert page_errors == []


def test_a_remark_shows_under_its_op(server_url, browser_page, page_errors, tmp_path):
    run = upload_via_api(server_url, _bundle(tmp_path, "remarks.tar.gz", FIXTURES / "remarks" / "remarks_sm90_triton39.log.xz",
                                             FIXTURES / "remarks" / "remark_kernels.py"))
    compilation = next(c for c in run["compilations"] if c["kernel"] == "carried_loop_kernel")
    (remark,) = httpx.get(server_url + compilation["url"] + ".json", timeout=60).json()["remarks"]
    placed = httpx.get(server_url + remark["snapshot"] + ".json", timeout=60).json()["remarks"][0]
    page = browser_page
    page.goto(server_url + remark["snapshot"])
    for number in placed["ir_lines"]:
        line = page.locator(f"#L{number}")
        expect(line).to_have_attribute("data-remark", f"warning: {remark['message']}")
        assert "Pipelining will be disabled" in line.evaluate("el => getComputedStyle(el, '::before').content")
    page.goto(server_url + compilation["url"])
    expect(page.locator("#remarks")).to_contain_text("TritonGPUPipeline")
    page.locator("#remarks a.loc").first.click()
    expect(page).to_have_url(server_url + remark["snapshot"] + f"#remark-{remark['log_line']}")
    assert page_errors == []
