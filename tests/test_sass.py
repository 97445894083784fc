"""SASS from real cubins (tests/fixtures/sass, see its .note): nvdisasm line info to Python lines,
instruction groups, the lexer, and the ingest that stores each cubin's SASS beside the PTX."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pygments.token import Keyword, Text, Whitespace
from sqlalchemy import select

from app.highlight import lexer_for
from app.ingest.disassembler import Disassembler, find_disassembler
from app.settings import Settings
from app.store.db import Database
from app.store.models import Artifact
from app.web.app import create_app
from parsers.caches import sass
from parsers.locations.loc import resolve
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

SASS = FIXTURES / "sass"
CACHE = SASS / "sm90_cache"
CUBIN = next(CACHE.glob("*/tma_kernel.cubin"))
TOOL = find_disassembler()
needs_tool = pytest.mark.skipif(TOOL.tool is None, reason="no nvdisasm or cuobjdump here (install the test extra)")
_OPCODE = re.compile(r"^\s*/\*[0-9a-f]{4}\*/\s+(?:@!?U?P[0-7T]\s+)?([A-Z][A-Z0-9_]*)")


def opcodes(text: str) -> list[str]:
    """Each instruction's opcode base, read the plain way, to check the parser against."""
    return [m.group(1) for line in text.splitlines() if (m := _OPCODE.match(line))]


def expected_groups(text: str) -> dict[str, int]:
    counts = dict.fromkeys(dict.fromkeys(sass.GROUP_OF.values()), 0)
    for opcode in opcodes(text):
        if opcode in sass.GROUP_OF:
            counts[sass.GROUP_OF[opcode]] += 1
    return counts


def test_instruction_groups_of_a_tma_and_a_tcgen05_kernel():
    tma = (SASS / "sm90_tma_kernel.sass").read_text()
    counts = sass.count_groups(tma)
    assert counts == expected_groups(tma)
    assert opcodes(tma).count("UTMALDG") == 1 and opcodes(tma).count("UTMASTG") == 1
    assert counts["tma"] >= 2 and counts["barrier"] >= opcodes(tma).count("SYNCS") > 0
    assert counts["mma"] == 0 and counts["async"] == 0
    tcgen05 = (SASS / "sm100_matmul_kernel.sass").read_text()
    counts = sass.count_groups(tcgen05)
    assert counts == expected_groups(tcgen05)
    assert counts["mma"] == opcodes(tcgen05).count("UTCHMMA") > 0
    assert counts["tmem"] >= opcodes(tcgen05).count("LDTM") > 0
    # predicated and modified instructions are counted by their base opcode
    assert sass.classify_line("        /*0e10*/                   @UP3 UTMALDG.2D [UR8], [UR6] ;") == ("tma",)
    assert sass.classify_line("        /*0dd0*/              @!P2 SYNCS.ARRIVE.TRANS64 RZ, [UR8+0x2000], R2 ;") == (
        "barrier",)
    assert sass.classify_line('\t//## File "/p/k.py", line 3') == ()


def test_nvdisasm_line_info_maps_instructions_to_python_lines_with_inlining():
    text = (SASS / "sm100_matmul_kernel.sass").read_text()
    lines = text.split("\n")
    locs = resolve(text, "sass")
    assert len(locs) == len(lines)
    first_info = next(i for i, line in enumerate(lines) if line.lstrip().startswith("//## File"))
    for index, line in enumerate(lines):
        if index > first_info and _OPCODE.match(line):
            assert locs[index].primary is not None, line  # every instruction after line info is located
            assert locs[index].primary.file == "/tmp/irlens-sass/kernels.py"
        if not line.strip() or line.lstrip().startswith("."):
            assert locs[index].primary is None
    kernel_source = (SASS / "kernels.py").read_text().splitlines()
    inlined = [loc for loc in locs if len(loc.frames) == 2]
    assert inlined, "scale() is inlined into the store: -gi gives its caller"
    for loc in inlined:
        callee, caller = loc.frames
        assert kernel_source[callee.line - 1].strip() == "return x * s"
        assert "scale(acc, 2.0)" in kernel_source[caller.line - 1]
        assert loc.primary == callee  # both frames are user code: the innermost is shown


def test_sass_lexer_knows_every_token_of_real_sass():
    lexer = lexer_for("sass")
    for name in ("sm90_tma_kernel.sass", "sm100_matmul_kernel.sass"):
        text = (SASS / name).read_text()
        tokens = list(lexer.get_tokens(text))
        unknown = [value for token, value in tokens if token in Text and token not in Whitespace and value.strip()]
        assert unknown == [], unknown[:20]
        assert [value for token, value in tokens if token is Keyword] == opcodes(text)


@needs_tool
def test_disassembler_reads_real_cubins_with_line_info():
    for cubin in (CUBIN, SASS / "sm80_matmul_kernel.cubin", SASS / "sm100_matmul_kernel.cubin"):
        with open(cubin, "rb") as stream:
            size, digest, result = TOOL.read_cubin(stream)
        assert size == cubin.stat().st_size and len(digest) == 64
        assert result is not None and result.problem is None
        text = result.text.decode()
        assert opcodes(text) and "EXIT" in opcodes(text)
        if "nvdisasm" in TOOL.tool:
            assert '//## File "/tmp/irlens-sass/kernels.py", line' in text
    # the sm80 mma.sync kernel: HMMA instructions
    sm80 = TOOL.disassemble(str(SASS / "sm80_matmul_kernel.cubin")).text.decode()
    assert sass.count_groups(sm80)["mma"] == opcodes(sm80).count("HMMA") > 0


@needs_tool
def test_cuobjdump_and_nvdisasm_give_the_same_instructions():
    folder = Path(TOOL.tool).parent
    nvdisasm, cuobjdump = folder / "nvdisasm", folder / "cuobjdump"
    if not (nvdisasm.exists() and cuobjdump.exists()):
        pytest.skip("needs both tools side by side (as Triton's wheel ships them)")
    by_nvdisasm = Disassembler(str(nvdisasm)).disassemble(str(CUBIN)).text.decode()
    by_cuobjdump = Disassembler(str(cuobjdump)).disassemble(str(CUBIN)).text.decode()
    assert "/* 0x" not in by_cuobjdump  # the encodings are dropped
    assert opcodes(by_cuobjdump) == opcodes(by_nvdisasm)
    assert sass.count_groups(by_cuobjdump) == sass.count_groups(by_nvdisasm)


@needs_tool
def test_uploaded_cache_shows_sass_with_python_lines_and_instruction_groups(tmp_path: Path):
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [CACHE, SASS / "kernels.py"], disassembler=TOOL)
    finally:
        database.dispose()
    (compilation,) = run["compilations"]
    assert compilation["artifacts"].index("ptx") < compilation["artifacts"].index("sass")
    assert run["warnings"] == []
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        detail = client.get(compilation["url"] + ".json").json()
        (sass_file,) = [f for f in detail["files"] if f["kind"] == "sass"]
        assert sass_file["name"] == "tma_kernel.sass"
        raw = client.get(sass_file["url"]).text
        assert {g["key"]: g["count"] for g in detail["sass"]["ops"]} == {
            key: count for key, count in expected_groups(raw).items() if count}
        view = client.get(sass_file["view_url"] + ".json").json()
        assert view["render_kind"] == "sass" and view["ops"]["tma"] == expected_groups(raw)["tma"]
        assert view["sources"][0]["file"] == "/tmp/irlens-sass/kernels.py" and view["sources"][0]["path"] == "kernels.py"
        page = client.get(sass_file["view_url"] + "?all=1").text
        load_line = (SASS / "kernels.py").read_text().splitlines().index("    x = desc.load([pid * BM, 0])") + 1
        assert f">kernels.py:{load_line}</span>" in page  # the gutter names the Python line
        assert "SASS instructions by group" in client.get(compilation["url"]).text


def test_without_a_disassembler_the_page_says_so_and_the_ingest_goes_on(tmp_path: Path):
    url = fresh_db_url(tmp_path)
    database = Database(url)
    missing = Disassembler(None, "no nvdisasm or cuobjdump was found where this run was stored")
    try:
        run = ingest_paths(database, [CACHE], disassembler=missing)
    finally:
        database.dispose()
    (compilation,) = run["compilations"]
    assert "sass" not in compilation["artifacts"] and "cubin" in compilation["artifacts"]
    assert [w["message"] for w in run["warnings"]] == [
        "SASS not shown for 1 cubin: no nvdisasm or cuobjdump was found where this run was stored"]
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        assert "No SASS: the cubin was not disassembled" in client.get(compilation["url"]).text


def test_a_failing_disassembler_costs_a_warning_not_the_ingest(tmp_path: Path):
    broken = tmp_path / "cache"
    shutil.copytree(CACHE, broken)
    cubin = next(broken.glob("*/tma_kernel.cubin"))
    cubin.write_bytes(cubin.read_bytes()[:3000])  # cut short: no tool can read it
    tool = TOOL if TOOL.tool else Disassembler(shutil.which("false"))
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [broken], disassembler=tool)
    finally:
        database.dispose()
    (compilation,) = run["compilations"]
    assert "sass" not in compilation["artifacts"] and {"ttgir", "ptx", "cubin"} <= set(compilation["artifacts"])
    # one warning per reader of the cut cubin: the disassembler's, and the resources' (its section table)
    disassembly, resources = sorted(run["warnings"], key=lambda warning: "registers" in warning["message"])
    assert "could not read this cubin" in disassembly["message"] and disassembly["path"].endswith("tma_kernel.cubin")
    assert "section table is damaged" in resources["message"] and resources["path"] == disassembly["path"]


@needs_tool
def test_a_kernel_dumps_own_sass_is_kept_instead_of_a_second_one(tmp_path: Path):
    """TRITON_KERNEL_DUMP folders hold {name}.sass beside the cubin: that one is the artifact."""
    dump = tmp_path / "dump" / "FVW2RKNCQKNHTNCF3VT5YJ5QNXUVQEQLVQYZ7LWGXUTURK4A5IJA"
    dump.mkdir(parents=True)
    for name in ("tma_kernel.ttgir", "tma_kernel.ptx", "tma_kernel.cubin"):
        shutil.copy(CUBIN.parent / name, dump / name)
    own = b"// the dump's own SASS\n" + (SASS / "sm90_tma_kernel.sass").read_bytes()
    (dump / "tma_kernel.sass").write_bytes(own)
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [tmp_path / "dump"], disassembler=TOOL)
        with database.session() as session:
            rows = session.scalars(select(Artifact).where(Artifact.kind == "sass")).all()
            assert [(row.path, row.sha256) for row in rows] == [
                (f"dump/{dump.name}/tma_kernel.sass", hashlib.sha256(own).hexdigest())]
    finally:
        database.dispose()
    assert run["warnings"] == []


def test_settings_choose_the_disassembler(tmp_path: Path):
    assert find_disassembler("off").tool is None and "turned off" in find_disassembler("off").reason
    assert find_disassembler(str(tmp_path / "nvdisasm")).tool is None
    if TOOL.tool:
        assert find_disassembler(TOOL.tool).tool == TOOL.tool
