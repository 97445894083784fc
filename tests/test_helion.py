"""Helion's generated Triton code (parsers/helion/), on a real Helion run made on an H200
(tests/fixtures/helion/README.md): the code HELION_PRINT_OUTPUT_CODE=1 printed is the file Helion wrote,
each statement's `# src[...]` origin quotes the Helion file's own line, and in the ingested run every
`_helion_` kernel's map reaches the Helion source, down to the IR of one Helion line."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from app import render
from app.ingest.log_prescan import LogPrescan
from app.store.db import Database
from app.web.views.ir_page import run_sources
from parsers import registry
from parsers.helion.generated import PRINTED_HEADER, PrintedCode, is_generated_code, matches_source, parse
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths
from tests.test_snapshot_pages import get_json, make_site

FIXTURE = FIXTURES / "helion"
ARCHIVE = FIXTURE / "helion_h200_triton36.tar.xz"
HELION_FILE = "helion_h200_triton36.tar.xz/helion_h200/helion_kernels.py"  # its path in the upload


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("helion")
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(folder, filter="data")
    return folder / "helion_h200"


def printed_blocks(log: Path) -> PrintedCode:
    """The printed modules of a log, fed as the log reader does: lines between dumps, ended by each banner."""
    printed = PrintedCode()
    block: list[tuple[int, str]] = []
    for number, line in enumerate(log.read_text().split("\n"), start=1):
        if line.startswith("// -----// IR Dump"):
            printed.feed(block)
            printed.finish()
            block = []
        else:
            block.append((number, line))
    printed.feed(block)
    printed.finish()
    return printed


def test_the_printed_code_is_the_file_helion_wrote(unpacked):
    printed = printed_blocks(unpacked / "fixed" / "capture.log")
    assert len(printed.blocks) == 2
    for block in printed.blocks:
        assert block.path.startswith("/tmp/torchinductor_root/")
        written = unpacked / "fixed" / "generated" / Path(block.path).relative_to("/tmp/torchinductor_root")
        assert block.text.rstrip("\n") == written.read_text().rstrip("\n")


def test_each_origin_quotes_the_helion_files_own_line(unpacked):
    source = (unpacked / "helion_kernels.py").read_text()
    source_lines = source.split("\n")
    for written in sorted((unpacked / "fixed" / "generated").rglob("*.py")):
        text = written.read_text()
        code = parse(text)
        assert code.files == ["helion_kernels.py"] and code.quoted
        assert matches_source(code, "helion_kernels.py", source) == len(code.quoted)
        (device,) = [kernel for kernel in code.kernels if kernel.device]
        assert device.name.startswith("_helion_")
        # each kernel statement's origin lies inside the Helion function of the same name
        name = device.name.removeprefix("_helion_")
        first = next(i for i, line in enumerate(source_lines, 1) if line.startswith(f"def {name}("))
        last = next((i for i, line in enumerate(source_lines[first:], first + 1) if line.startswith(("def ", "@"))),
                    len(source_lines)) - 1
        assert all(first <= s.origin.start <= s.origin.end <= last for s in device.statements)
    # the generated tl.dot comes from the Helion line that calls torch.addmm
    matmul = next(p for p in (unpacked / "fixed" / "generated").rglob("*.py") if "_helion_matmul" in p.read_text())
    code = parse(matmul.read_text())
    dot = next(i for i, line in enumerate(matmul.read_text().split("\n"), 1) if "tl.dot(" in line)
    addmm = next(i for i, line in enumerate(source_lines, 1) if "torch.addmm(" in line)
    assert code.origins[dot].start == addmm


def test_registry_tells_generated_code_from_the_log(unpacked):
    written = next((unpacked / "fixed" / "generated").rglob("*.py"))
    assert registry.classify("gen/c.py", written.read_bytes()[:8192]).role == "helion-code"
    log_head = (unpacked / "fixed" / "capture.log").read_bytes()[:8192]
    assert log_head.startswith(PRINTED_HEADER.encode())
    assert not is_generated_code("capture.log", log_head)
    assert registry.classify("fixed/capture.log", log_head).role == "log"
    assert registry.classify("helion_kernels.py", (unpacked / "helion_kernels.py").read_bytes()).role == "source"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    client, run = make_site(tmp_path_factory.mktemp("helion-site"), [ARCHIVE])
    with client:
        yield client, run


def _lines_with(client, compilation: dict, helion_line: int) -> dict[int, list[str]]:
    """The IR text of each snapshot's lines that map to `helion_line` of the Helion file."""
    data = get_json(client, f"{compilation['url']}/map?file={HELION_FILE}&line={helion_line}")
    assert data["source"] == HELION_FILE
    found = {}
    for row in data["snapshots"]:
        if row["lines"]:
            text = get_json(client, row["url"])["text"].split("\n")
            found[row["index"]] = [text[number - 1] for number in row["lines"]]
    return found


def matmul_snapshots(client, compilation: dict) -> list[dict]:
    return get_json(client, compilation["url"])["snapshots"]


def first_llvm(client, compilation: dict) -> int:
    return next(s["index"] for s in matmul_snapshots(client, compilation) if s["stage"] != "ttir" and s["stage"] != "ttgir")


def test_each_helion_kernels_map_reaches_the_helion_source(site, unpacked):
    client, run = site
    kernels = [c for c in run["compilations"] if c["kernel"].startswith("_helion_")]
    assert {c["kernel"] for c in kernels} == {"_helion_add", "_helion_matmul", "_helion_scale_add"}
    for compilation in kernels:
        data = get_json(client, compilation["url"] + "/map")
        files = {item["file"]: item for item in data["files"]}
        helion = files.get(HELION_FILE) if "scale_add" not in compilation["kernel"] else files.get(
            HELION_FILE.replace("helion_kernels", "helion_tuned"))
        assert helion is not None, (compilation["kernel"], list(files))
        generated = files[helion["via"]]  # the module Helion generated, as the IR's loc() names it
        assert "torchinductor_root" in helion["via"] and 0 < helion["lines"] <= generated["lines"]
        # without a line, the page opens on the Helion file
        assert data["overview"]["file"] == helion["file"] and data["overview"]["path"] == helion["file"]
        assert data["overview"]["via"] == helion["via"] and "/src/" in data["overview"]["via_url"]
        page = client.get(compilation["url"] + "/map")
        assert data["overview"]["via_url"] in page.text
        assert page.status_code == 200 and f"{Path(helion['file']).name} ({helion['lines']} IR lines)" in page.text
    source = (unpacked / "helion_kernels.py").read_text().split("\n")
    addmm = next(i for i, line in enumerate(source, 1) if "torch.addmm(" in line)
    add = next(i for i, line in enumerate(source, 1) if "x[tile] + y[tile]" in line)
    matmul = next(c for c in kernels if c["kernel"] == "_helion_matmul")
    dots = _lines_with(client, matmul, addmm)
    # the MMA through every pass that still has an op for it (TTIR's tt.dot, Hopper's warp_group_dot)
    mlir = [s["index"] for s in matmul_snapshots(client, matmul) if s["kind"] == "mlir"]
    assert set(mlir) <= set(dots)  # every pass dump (the 2 internal dumps print no locations)
    assert all(any(" tt.dot " in line or " ttng.warp_group_dot " in line for line in lines)
               for index, lines in dots.items() if index < first_llvm(client, matmul))
    adds = _lines_with(client, next(c for c in kernels if c["kernel"] == "_helion_add"), add)
    assert adds and any("arith.addf" in line for lines in adds.values() for line in lines)


def test_the_python_pane_shows_the_helion_source(site):
    client, run = site
    matmul = next(c for c in run["compilations"] if c["kernel"] == "_helion_matmul")
    snapshot = get_json(client, f"{matmul['url']}/s/1")
    first = snapshot["sources"][0]
    assert first["file"] == HELION_FILE and first["path"] == HELION_FILE and first["lines"] > 0
    assert "torchinductor_root" in snapshot["sources"][1]["file"]
    page = client.get(f"{matmul['url']}/s/1").text
    assert f'title="{HELION_FILE} (uploaded as {HELION_FILE})"' in page


def test_the_generated_source_lists_each_kernel_with_its_helion_lines(site, unpacked):
    client, run = site
    sources = get_json(client, f"{run['url']}/src/{HELION_FILE}")
    assert sources["helion"] is None  # the Helion file itself is no generated code
    printed = printed_blocks(unpacked / "fixed" / "capture.log").blocks
    path = next(block.path for block in printed if "_helion_matmul" in block.text)
    data = get_json(client, f"{run['url']}/src/{path}")
    kernel = data["helion"][0]
    assert kernel["name"] == "_helion_matmul" and kernel["device"] and kernel["files"] == [HELION_FILE]
    code = parse(data["text"])
    expected = [(s.line, s.origin.label()) for s in code.kernels[0].statements]
    assert [(s["line"], s["origin"]) for s in kernel["statements"]] == expected
    assert all(s["source_url"].endswith(f"/src/{HELION_FILE}#L{s['start']}") for s in kernel["statements"])
    html = client.get(f"{run['url']}/src/{path}").text
    assert "Helion kernels" in html and f"#L{kernel['statements'][0]['start']}" in html


def test_a_binary_only_cache_entry_says_why_it_has_no_passes(tmp_path):
    client, run = make_site(tmp_path, [FIXTURE / "binary_only_cpu" / "cache"])
    with client:
        (warning,) = [w for w in run["warnings"] if "binary-only" in w["message"]]
        assert "TRITON_STORE_BINARY_ONLY=1" in warning["message"] and "Helion" in warning["message"]
        (compilation,) = run["compilations"]
        data = get_json(client, compilation["url"])
        assert data["binary_only"] and not data["snapshots"]
        assert "binary-only-note" in client.get(compilation["url"]).text


def test_many_binary_only_entries_make_one_warning(tmp_path):
    """An autotuner that keeps its candidates leaves one binary-only entry per config: one warning, counted."""
    (entry,) = (FIXTURE / "binary_only_cpu" / "cache").iterdir()
    for name in ("A" * 52, "B" * 52, "C" * 52):
        shutil.copytree(entry, tmp_path / "cache" / name)
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [str(tmp_path / "cache")])
    finally:
        database.dispose()
    (warning,) = [w for w in run["warnings"] if "binary-only" in w["message"]]
    assert warning["message"].startswith("3 binary-only cache entries (the first named): metadata and a binary")
    assert len(run["compilations"]) == 3


def test_a_complete_entry_is_not_binary_only(site):
    client, run = site
    matmul = next(c for c in run["compilations"] if c["kernel"] == "_helion_matmul")
    assert get_json(client, matmul["url"])["binary_only"] is None
    assert not [w for w in run["warnings"] if "binary-only" in w["message"]]


@pytest.mark.parametrize("helper", [False, True], ids=["in-process", "prescan-helper"])
def test_a_plain_log_gives_the_printed_modules_as_sources(tmp_path, unpacked, helper):
    """The log alone, read in process or by the prescan helper (large plain logs): each printed module
    is a source under the path Helion wrote it to, with the file's text."""
    log = unpacked / "fixed" / "capture.log"
    prescan = LogPrescan.start([str(log)], min_bytes=0) if helper else None
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [str(log)], prescan=prescan)
        with database.session() as session:
            sources = run_sources(session, run["run"])
            texts = {path: render.blob_reader.text(session, digest) for path, digest in sources.items()}
    finally:
        database.dispose()
    generated = {"/tmp/torchinductor_root/" + str(p.relative_to(unpacked / "fixed" / "generated")): p.read_text()
                 for p in (unpacked / "fixed" / "generated").rglob("*.py")}
    assert set(texts) == set(generated)
    assert all(texts[path].rstrip("\n") == generated[path].rstrip("\n") for path in generated)


def test_hostile_origin_comments_are_no_origins():
    text = ("def _helion_k(x):\n"
            "    # src[k.py:" + "9" * 5000 + "]: too long a number\n"
            "    a = 1\n"
            "    # src[" + "k:1" * 100_000 + "\n"  # no closing bracket
            "    b = 2\n"
            "    # src[unknown]: [source unavailable]\n"
            "    c = 3\n")
    code = parse(text)
    assert code.files == [] and code.quoted == {}
    assert [s.origin.file for s in code.kernels[0].statements] == [None]  # only `unknown` names an origin
    printed = PrintedCode()
    printed.feed([(1, PRINTED_HEADER), (2, "not code at all"), (3, PRINTED_HEADER + "/tmp/x.py")])
    printed.finish()
    assert printed.blocks == []  # a header without a path, and one without code, give nothing
