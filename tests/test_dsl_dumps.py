"""Tile DSLs' dumps on real captures (tests/fixtures/{cute,cutile,tilelang}/README.md say how each was
made): CuTe DSL's CUTE_DSL_KEEP folder and layout types, cuTile's logs, TileIR text and bytecode,
TileLang's per-pass TVMScript folder."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from app.highlight.cute_layouts import explain_type
from app.highlight.hwops import count_groups
from app.ingest.cutile_files import NO_TOOL, find_tileirdisasm
from app.layouts.cute import Swizzle, parse
from parsers.cutile.logs import CUTILEIR, TILEIR, split
from tests.conftest import FIXTURES, ingest_paths

CUTE = FIXTURES / "cute"
CUTILE = FIXTURES / "cutile"
TILELANG = FIXTURES / "tilelang"


# -- CuTe DSL ----------------------------------------------------------------------------------------


def test_cute_keep_folder_is_one_compilation_with_its_stages_and_cubin_resources(db):
    run = ingest_paths(db, [CUTE / "add_keep"])
    (compilation,) = run["compilations"]
    assert compilation["kernel"].startswith("cutlass_add_") and compilation["snapshots"]["mlir"] == 2
    assert sorted(compilation["artifacts"]) == ["cubin", "ptx", "sass"]
    # cuobjdump --dump-resource-usage on the cubin: REG:20 STACK:0 LOCAL:0 (the fixture's README)
    resources = compilation["resources"]
    assert (resources["registers"], resources["stack"], resources["local"]) == (20, 0, 0)
    assert not run["damaged"]


def test_cute_keep_folder_of_two_kernels_splits_their_artifacts(db):
    run = ingest_paths(db, [CUTE / "two_kernels_keep"])
    registers = {c["kernel"].split("_")[1]: (c["resources"]["registers"], sorted(c["artifacts"]))
                 for c in run["compilations"]}
    # cuobjdump --dump-resource-usage: REG:12 for the add, REG:10 for the scale (the fixture's README)
    assert registers == {"add": (12, ["cubin", "ptx", "sass"]), "scale": (10, ["cubin", "ptx", "sass"])}
    assert not run["warnings"]


def test_cute_layout_mapping_follows_cute_algebra():
    layout = parse("(128,16):(1,128)")
    assert (layout.size, layout.cosize, layout.rank) == (2048, 2048, 2)
    # colexicographic: i = c0 + 128·c1 goes to c0·1 + c1·128
    assert [layout(i) for i in (0, 1, 127, 128, 129, 2047)] == [0, 1, 127, 128, 129, 2047]
    row_major = parse("(4,8):(8,1)")
    assert [row_major(i) for i in range(6)] == [0, 8, 16, 24, 1, 9]
    nested = parse("((2,2),4):((1,1024),4096)")
    assert nested.shapes == [2, 2, 4] and [nested(i) for i in range(5)] == [0, 1, 1024, 1025, 4096]
    assert parse("(4,1):(1,0)").cosize == 4 and parse("(2,4):(0,1)").cosize == 4  # a broadcast mode
    assert parse("(?,?,?):(?{i64},1,?{i64})").size is None
    assert Swizzle(3, 4, 3)(1 << 7) == (1 << 7) ^ (1 << 4)  # bit 7 is XORed into bit 4


def test_cute_types_are_explained_with_their_numbers():
    memref = explain_type('!cute.memref<f32, smem, align<128>, S<3,4,3>, "((128,8),1,4,7):((32,1),0,8,4096)">')
    fields = {field.name: field for field in memref.fields}
    assert fields["memory"].value == "smem" and "shared memory" in memref.summary
    assert "swizzle S<3,4,3>" in fields["swizzle"].explanation and "bit 7" in fields["swizzle"].explanation
    assert "mode 0: 128 coordinates, stride 32" in fields["layout"].explanation
    layout = explain_type('!cute.layout<"(128,16):(1,128)">')
    assert "2048 elements" in layout.summary and "compact" in layout.fields[0].explanation
    tiled = explain_type('!cute.tiled_copy<!cute_nvgpu.atom.universal_copy<f32>, layout_copy_tv = '
                         '<"((32,4),(4,4)):((64,4),(16,1))">, tiler_mn = <"[16:1;128:1]">>')
    assert [field.name for field in tiled.fields] == ["layout_copy_tv", "tiler_mn"]
    assert "0→0, 1→64" in tiled.fields[0].explanation and "mode 1 by 128:1" in tiled.fields[1].explanation
    assert explain_type("!cute.layout<\"(1,2:(1)\">").fields[0].explanation.startswith("a layout irlens cannot read")


def test_cute_pages_link_type_aliases_and_explain_inline_layouts(tmp_path):
    from tests.test_snapshot_pages import get_html, get_json, make_site

    client, run = make_site(tmp_path, [CUTE / "add_keep"])
    with client:
        url = run["compilations"][0]["url"] + "/s/0"
        layouts = get_json(client, url)["layouts"]
        (kept,) = (CUTE / "add_keep").glob("cute_dsl_*[0-9].mlir")
        lines = kept.read_text().split("\n")
        line = next(n for n, text in enumerate(lines, start=1) if text.startswith("!memref_gmem_f32 ="))
        assert layouts["memref_gmem_f32"]["kind"] == "memref" and layouts["memref_gmem_f32"]["line"] == line
        html = get_html(client, url)
        assert 'data-ly="memref_gmem_f32"' in html and "data-enc=" in html
        assert f'href="#L{line}">!memref_gmem_f32</a>' in html  # a type alias, named with its `!`
        # the per-pass op columns show CuTe's copies
        assert 'op-dot hw-copy"></span>Copy' in get_html(client, run["compilations"][0]["url"])


def test_cute_hardware_ops_are_marked():
    (kept,) = (CUTE / "add_keep").glob("cute_dsl_*[0-9].mlir")
    text = kept.read_text()
    copies = [line for line in text.split("\n") if re.match(r"\s*(?:%\S+ = )?cute\.copy\b", line)]
    assert copies and count_groups(text)["copy"] == len(copies)  # the kernel's cute.copy through its atoms


# -- cuTile ------------------------------------------------------------------------------------------


def test_cutile_log_splits_into_each_kernels_modules():
    log = (CUTILE / "vec_add" / "cutile_logs.stderr.log").read_text()
    kernels = split(log)
    assert [k.name for k in kernels] == ["vec_add", "vec_add"]  # compiled twice: bytecode, then cubin
    assert [[b.kind for b in k.blocks] for k in kernels] == [[CUTILEIR, TILEIR]] * 2
    assert not any(b.cut for k in kernels for b in k.blocks)
    # the TileIR printed to the log is what CUDA_TILE_DUMP_TILEIR wrote to its file
    dumped = (CUTILE / "vec_add" / "vec_add.tile_add.ln8.em4y5wor.tileir").read_text().strip()
    assert kernels[0].blocks[1].text == dumped
    assert kernels[0].blocks[0].text.endswith("\nreturn")


def test_cutile_log_cut_short_keeps_what_it_has():
    log = (CUTILE / "vec_add" / "cutile_logs.stderr.log").read_text()
    cut = log[: log.index("load_view_tko", log.index("==== TILEIR ===="))]  # the first TileIR cut mid-op
    kernels = split(cut)
    assert [b.cut for b in kernels[0].blocks] == [False, True]
    assert kernels[0].blocks[1].text.startswith("entry @vec_add_")


def test_cutile_log_with_an_overlong_kernel_name_ingests(db, tmp_path):
    log = (CUTILE / "vec_add" / "cutile_logs.stderr.log").read_text().replace("vec_add====", "v" * 3000 + "====")
    (tmp_path / "long.log").write_text(log)
    run = ingest_paths(db, [tmp_path / "long.log"])
    assert [len(c["kernel"]) for c in run["compilations"]] == [500, 500]


def test_cutile_upload_ingests_text_logs_and_keeps_bytecode(db, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no tileirdisasm: the bytecode is kept with a note
    if find_tileirdisasm() is not None:
        pytest.skip("tileirdisasm is installed as a Python package here")
    run = ingest_paths(db, [CUTILE / "vec_add"])
    by_log = {}
    for compilation in run["compilations"]:
        by_log.setdefault(os.path.basename(compilation["log"] or ""), []).append(compilation)
    assert [c["snapshots"]["mlir"] for c in by_log["cutile_logs.stderr.log"]] == [2, 2]
    (text,) = by_log["vec_add.tile_add.ln8.em4y5wor.tileir"]
    assert text["snapshots"]["mlir"] == 1 and text["kernel"].startswith("vec_add")
    notes = {os.path.basename(log["path"]): log["note"] for log in run["logs"]}
    assert notes["vec_add.tileirbc"].startswith(NO_TOOL) and "tileirdisasm" in notes["vec_add.tileirbc"]


def test_cutile_bytecode_is_decoded_where_tileirdisasm_is_installed(db, tmp_path):
    if find_tileirdisasm() is None:
        pytest.skip("tileirdisasm is not installed (CUDA 13.1+ or pip nvidia-cuda-tileiras)")
    folder = tmp_path / "dump"
    folder.mkdir()
    for name in ("vec_add.tileirbc", "vec_add.cubin"):
        shutil.copy(CUTILE / "vec_add" / name, folder / name)
    run = ingest_paths(db, [folder])
    (compilation,) = run["compilations"]
    assert compilation["kernel"] == "vec_add" and compilation["artifacts"] == ["cubin"]
    assert compilation["resources"]["registers"] == 22  # cuobjdump: REG:22 (the fixture's README)
    from sqlalchemy import select

    from app.render import blob_reader
    from app.store.models import Compilation

    with db.session() as session:
        snapshot = session.scalars(select(Compilation)).one().snapshots[0]
        text = blob_reader.text(session, snapshot.blob)
    # the decode is tileirdisasm -g's own output (the fixture's reference, made with 13.5.37)
    assert text == (CUTILE / "vec_add.tileirdisasm-g.txt").read_text().rstrip()


def test_tileir_text_ops_are_highlighted_and_mma_marked(tmp_path):
    from tests.test_snapshot_pages import get_html, make_site

    (path,) = sorted((CUTILE / "matmul").glob("*.tileir"))[:1]
    assert count_groups(path.read_text())["mma"] == path.read_text().count("= mmaf ")
    client, run = make_site(tmp_path, [path])
    with client:
        html = get_html(client, run["compilations"][0]["url"] + "/s/0")
    for op in ("load_view_tko", "mmaf", "make_partition_view"):
        assert f'<span class="nf">{op}</span>' in html


# -- TileLang ----------------------------------------------------------------------------------------


def test_tilelang_dump_folder_is_one_compilation_in_counter_order(db):
    run = ingest_paths(db, [TILELANG])
    dumps = [c for c in run["compilations"] if c["log"] and c["log"].endswith("gemm_dump_ir")]
    (compilation,) = dumps
    files = sorted((TILELANG / "gemm_dump_ir").glob("*.py"))
    assert compilation["snapshots"]["tvmscript"] == len(files) == 11
    assert compilation["kernel"] == "gemm" and compilation["stages"] == ["tir"]
    roles = {os.path.basename(log["path"]): log["role"] for log in run["logs"]}
    assert roles["tl_gemm.py"] == "source" and roles["027_tl.LowerTileOp.py"] == "tilelang-pass"


def test_tilelang_snapshots_render_as_python_and_diff(tmp_path):
    from tests.test_snapshot_pages import get_html, get_json, make_site

    client, run = make_site(tmp_path, [TILELANG / "gemm_dump_ir"])
    with client:
        url = run["compilations"][0]["url"]
        data = get_json(client, url)
        passes = [snapshot["pass"] for snapshot in data["snapshots"]]
        assert passes == [Path(name).stem.split("_", 1)[1] for name in sorted(os.listdir(TILELANG / "gemm_dump_ir"))]
        page = get_json(client, url + "/s/3")
        assert page["render_kind"] == "python" and page["stage"] == "tir"
        assert ">prim_func<" in get_html(client, url + "/s/3")
        diff = client.get(get_json(client, url + "/s/4")["diff_prev_url"])
        assert diff.status_code == 200
