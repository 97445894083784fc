"""Nsight Compute's per-instruction metrics on the SASS view (issue 27): tests/fixtures/gpu_runs/ncu.tar.xz
holds the Triton cache of the profiled run (cubins included) and the source page exported as CSV
(`--page source --csv --print-source sass`: one row per instruction, `"0x7fdf3f7b3e00","LDC R1, ..."`).
The cubins are disassembled here (nvdisasm or cuobjdump from the Triton wheel); the profiler's
addresses less the kernel's first are the offsets nvdisasm prints (`/*0010*/`). Checked against the
CSV read here with csv.reader: the instructions (opcode and predicate) agree at every offset, and the metric
over the instructions shown plus the profile's instructions not shown is the CSV's column total."""

from __future__ import annotations

import csv
import io
import re
import tarfile
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app.ingest.disassembler import find_disassembler
from app.settings import Settings
from app.web.app import create_app
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

NCU = FIXTURES / "gpu_runs" / "ncu.tar.xz"
METRIC = "Warp Stall Sampling (All Samples)"
TOOL = find_disassembler()
pytestmark = pytest.mark.skipif(TOOL.tool is None, reason="no nvdisasm or cuobjdump here (install the test extra)")


def _csv_kernels() -> list[dict]:
    """Per kernel block of the CSV: its name, offset -> instruction text, and the column's total."""
    with tarfile.open(NCU) as tar:
        text = tar.extractfile("ncu/source_sass.csv").read().decode()
    kernels: list[dict] = []
    column = None
    for row in csv.reader(io.StringIO(text)):
        if row[:1] == ["Kernel Name"]:
            kernels.append({"name": row[1], "rows": [], "total": 0})
        elif row[:1] == ["Address"]:
            column = row.index(METRIC)
        elif row and row[0].startswith("0x"):
            kernels[-1]["rows"].append((int(row[0], 16), row[1].strip()))
            kernels[-1]["total"] += int(row[column])
    for kernel in kernels:
        first = min(address for address, _ in kernel["rows"])
        kernel["texts"] = {address - first: text for address, text in kernel["rows"]}
    return kernels


@pytest.fixture(scope="module")
def ncu_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ncu")
    url = fresh_db_url(tmp)
    from app.store.db import Database

    database = Database(url)
    run = ingest_paths(database, [NCU], disassembler=TOOL)
    database.dispose()
    return TestClient(create_app(Settings(db_url=url, load_demo=False), background=False)), run


def _sass_pages(client, run) -> list[tuple[str, list[str]]]:
    """(view URL, raw text lines) of every compilation's SASS file."""
    pages = []
    for compilation in client.get(run["url"] + ".json").json()["compilations"]:
        files = client.get(compilation["url"] + ".json").json()["files"]
        (sass,) = [f for f in files if f["kind"] == "sass"]
        pages.append((sass["view_url"], client.get(sass["url"]).text.split("\n")))
    return pages


_OFFSET = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*.*)?$")


def _same(text: str) -> str:
    """The opcode with its predicate: the operands are printed differently (nvdisasm marks `.reuse`,
    names branch targets `.L_x_0` where ncu gives addresses, orders LDGSTS's operands otherwise)."""
    words = text.split()
    return " ".join(words[:2] if words and words[0].startswith("@") else words[:1])


def test_sass_view_carries_each_instructions_metrics(ncu_site):
    client, run = ncu_site
    kernels = _csv_kernels()
    pages = _sass_pages(client, run)
    assert len(pages) == len(kernels) == 4
    used = set()
    for view_url, raw in pages:
        # the text's own instructions by offset, read here
        own = {}
        for number, line in enumerate(raw, start=1):
            match = _OFFSET.match(line)
            if match:
                own[int(match.group(1), 16)] = (number, _same(match.group(2)))
        # the CSV block that is this cubin's: every one of its instructions is this text's, same text
        (k,) = [k for k, kernel in enumerate(kernels) if k not in used and all(
            own.get(offset, (0, None))[1] == _same(text) for offset, text in kernel["texts"].items())]
        used.add(k)
        page = client.get(f"{view_url}.json?metric={quote(METRIC)}").json()["metrics"]
        assert page["metric"]["name"] == METRIC
        instructions = page["instructions"]
        assert len(instructions) == len(kernels[k]["texts"])
        for item in instructions:
            assert own[item["offset"]][0] == item["line"]
        shown = sum(item["value"] for item in instructions)
        assert shown + page["unattributed"] == kernels[k]["total"] > 0
        # the heat gutter's values are the instructions' own
        gutter = {row["line"]: row["value"] for row in page["lines"]}
        assert gutter == {item["line"]: item["value"] for item in instructions if item["value"]}
    html = client.get(f"{pages[0][0]}?metric={quote(METRIC)}").text
    assert '"direct": true' in html and '"detail": {"' in html
