"""Per-pass file folders (parsers/perpass/, app/ingest/pass_files.py) on real folders: MLIR tree
printing (iree-opt), LLVM's -ir-dump-directory (opt 22), a CuTe DSL per-pass split, a bare .mlir
file; and the Python lines a text without locations borrows (app/render/loc_transfer.py)."""

from __future__ import annotations

import os
import re

from parsers.cute.keep import CUTE_KEEP, keep_file
from parsers.perpass.names import LLVM_DIR, MODULE, NUMBERED, TREE, pass_file
from tests.conftest import FIXTURES, ingest_paths, map_indexes

PERPASS = FIXTURES / "perpass"
CUTE_PASSES = FIXTURES / "cute" / "add_passes"


def _passes(database, run: dict) -> list[list[tuple[str, str]]]:
    """(when, pass) of each compilation's snapshots, as stored."""
    from sqlalchemy import select

    from app.store.models import Compilation

    with database.session() as session:
        return [[(s.banner.when, s.banner.pass_name) for s in compilation.snapshots]
                for compilation in session.scalars(select(Compilation).where(Compilation.run_id == run["run"])
                                                   .order_by(Compilation.ordinal))]


def test_file_names_of_each_style():
    assert pass_file("d/dense_gemm_005_CuteExpandOps.mlir", b"!a = !cute.layout<\"1:0\">\n").order == (5, 0)
    first = pass_file("d/dense_gemm_0_with_loc.mlir", b"module {")
    second = pass_file("d/dense_gemm_0_.mlir", b"module {")
    assert (first.style, first.when, first.order, first.group) == (NUMBERED, "before", (0, 0), "d/dense_gemm")
    assert (second.order, second.pass_name) == ((0, 1), None)
    tree = pass_file("t/builtin_module_no-symbol-name/func_func_f/0_1_cse.mlir", b"// -----// IR Dump After CSE (cse) //----- //\n")
    assert (tree.style, tree.group, tree.order) == (TREE, "t", (0, 1))
    llvm = pass_file("o/12-8b6449451719a9a2-module-IPSCCPPass-after.ll", b"; *** IR Dump After IPSCCPPass on [module] ***\n")
    assert (llvm.style, llvm.order, llvm.group) == (LLVM_DIR, (12, 1), "o/8b6449451719a9a2")
    keep = keep_file("k/cute_dsl_cutlass_add_x_clean.mlir", b"!a = !cute.memref<f32, gmem, \"4:1\">\n")
    assert (keep.style, keep.group, keep.when) == (CUTE_KEEP, "k/cutlass_add_x", "after")
    assert pass_file("x/kernel.mlir", b"module {\n}").style == MODULE
    assert pass_file("x/kernel.ll", b"; ModuleID = 'k'\n").style == MODULE
    assert pass_file("x/opt.ll", b"; *** IR Dump After InstCombinePass on f ***\n") is None  # a log
    assert pass_file("x/k.txt", b"cuda_tile.module @m {\n").style == MODULE
    # a log of dumps named .mlir (MLIR_DUMP_PATH) stays a log; Python and logs are not pass files
    assert pass_file("x/dump.mlir", b"warning\n// -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //\n") is None
    # ...also when its first line is a banner (the file Triton 3.9 writes), not one module
    assert pass_file("src/dumpfile.mlir", b"// -----// IR Dump Before InlinerPass: inline ('builtin.module' operation) //----- //\n") is None
    assert pass_file("x/kernel.py", b"import triton") is None
    assert pass_file("x/kernel.mlir", b"ML\xefR\x00\x06MLIR") is None  # MLIR bytecode: binary data


def test_mlir_tree_printing_folder_is_one_compilation_in_counter_order(db):
    run = ingest_paths(db, [PERPASS / "iree_tree" / "tree"])
    (compilation,) = run["compilations"]
    assert compilation["snapshots"]["mlir"] == 5 and not run["damaged"]
    # counters order the files across folders: the func's nested passes (0_*) ran inside pass 0
    names = [os.path.basename(p) for p in sorted(
        str(p.relative_to(PERPASS)) for p in (PERPASS / "iree_tree" / "tree").rglob("*.mlir"))]
    banners = [
        (path.read_text().split("\n", 1)[0], tuple(int(n) for n in re.match(r"([\d_]+)_", path.name).group(1).split("_")))
        for path in (PERPASS / "iree_tree" / "tree").rglob("*.mlir")
    ]
    expected = [re.search(r"IR Dump After (\w+)", banner).group(1) for banner, _ in sorted(banners, key=lambda b: b[1])]
    assert [name for _, name in _passes(db, run)[0]] == expected
    assert len(names) == 5


def test_cute_dsl_tree_printing_folder_orders_nested_passes_by_their_counters(db):
    root = FIXTURES / "cute" / "add_tree"
    run = ingest_paths(db, [root])
    (compilation,) = run["compilations"]
    files = sorted(root.rglob("*.mlir"), key=lambda path: tuple(int(n) for n in re.match(r"([\d_]+)_", path.name).group(1)
                                                                  .rstrip("_").split("_")))
    assert compilation["snapshots"]["mlir"] == len(files) == 17 and not run["damaged"]
    expected = [re.search(r"IR Dump After (\w+)", path.read_text().split("\n", 1)[0]).group(1) for path in files]
    assert [name for _, name in _passes(db, run)[0]] == expected
    assert expected[:2] == ["CuteRemoveStaticArgs", "MaterializeTmaMulticast"]


def test_llvm_ir_dump_directory_is_one_compilation_in_number_order(db):
    run = ingest_paths(db, [PERPASS / "llvm_ir_dump_dir"])
    (compilation,) = run["compilations"]
    files = sorted((PERPASS / "llvm_ir_dump_dir").glob("*.ll"), key=lambda path: int(path.name.split("-")[0]))
    assert compilation["snapshots"]["llvm"] == len(files) == 14
    # the pass each banner names, in the files' numbering (the reference: the files' own first lines)
    expected = [re.search(r"IR Dump After (\w+)", path.read_text()).group(1) for path in files]
    assert [name for _, name in _passes(db, run)[0]] == expected
    assert compilation["stages"] == ["llvm-ir"] and not run["damaged"]


def test_bare_mlir_file_is_one_snapshot(db):
    run = ingest_paths(db, [FIXTURES / "iree_simple_mul.mlir"])
    (compilation,) = run["compilations"]
    assert compilation["snapshots"]["mlir"] == 1 and compilation["kernel"] == "simple_mul"
    assert run["logs"][0]["role"] == "pass-file"


def test_cute_per_pass_folder_maps_every_pass_through_the_first_files_locations(db):
    run = ingest_paths(db, [CUTE_PASSES])
    (compilation,) = run["compilations"]
    numbered = sorted(CUTE_PASSES.glob("cute_add_0[0-9][0-9]_*.mlir"))
    assert compilation["snapshots"]["mlir"] == 2 + len(numbered) == 16
    assert compilation["kernel"] == "cute_add" and not run["damaged"]
    assert not [w for w in run["warnings"] if "damaged" in w["kind"]]
    passes = _passes(db, run)[0]
    assert passes[2:] == [("after", re.match(r"cute_add_\d+_(.+)\.mlir", p.name).group(1)) for p in numbered]
    assert passes[:2] == [("before", "CuteRemoveStaticArgs")] * 2  # with_loc, then the pass manager's copy
    indexes = map_indexes(db)[0]
    files = [{os.path.basename(file): count for file, count in entry[0].items()} for entry in indexes]
    # the with_loc file maps by its own loc(); the generic-form files (no loc at all) borrow them
    assert "loc(" not in (CUTE_PASSES / "cute_add_0_.mlir").read_text()
    assert files[0]["cute_add.py"] > 0 and all(f.get("cute_add.py", 0) > 0 for f in files[1:8])
    assert files[-1] == {}  # the end of the pipeline: every op lowered to another dialect, nothing lines up


def test_generic_copy_borrows_exactly_the_located_copys_lines():
    """`_0_.mlir` is the same module as `_0_with_loc.mlir`, printed generic and without loc: every op
    lines up, so it borrows each op's location (the reference: the located file's own ops, in order)."""
    from app.render.loc_transfer import transfer
    from parsers.locations.loc import resolve

    donor = (CUTE_PASSES / "cute_add_0_with_loc.mlir").read_text()
    copy = (CUTE_PASSES / "cute_add_0_.mlir").read_text()
    op = re.compile(r'^\s*(?:%[^=\n"]*=\s*)?"?([a-z_]\w*\.[\w.]+)')
    located = [(m.group(1), loc.primary) for line, loc in zip(donor.split("\n"), resolve(donor, "mlir"), strict=False)
               if not line.startswith(("#", "!")) and (m := op.match(line))]
    borrowed = [(m.group(1), loc.primary) for line, loc in zip(copy.split("\n"), transfer(donor, copy), strict=True)
                if not line.startswith(("#", "!")) and (m := op.match(line))]
    # reference, independent of the alignment: the k-th op of a name in the copy is the k-th op of
    # that name in the located file (the two print forms differ in a few ops: `module` is custom-only)
    by_name_located: dict[str, list] = {}
    by_name_borrowed: dict[str, list] = {}
    for name, loc in located:
        by_name_located.setdefault(name, []).append(loc)
    for name, loc in borrowed:
        by_name_borrowed.setdefault(name, []).append(loc)
    same = [name for name in by_name_located if len(by_name_located[name]) == len(by_name_borrowed.get(name, []))]
    checked = sum(len(by_name_located[name]) for name in same)
    assert checked > 100
    for name in same:
        assert by_name_borrowed[name] == by_name_located[name], name


def test_snapshot_page_shows_borrowed_lines(tmp_path):
    from tests.test_snapshot_pages import get_json, make_site

    client, run = make_site(tmp_path, [CUTE_PASSES])
    with client:
        url = run["compilations"][0]["url"]
        page = get_json(client, url + "/s/1")
        lines = page["text"].split("\n") if "text" in page and isinstance(page["text"], str) else None
        located = [loc for loc in page["locs"] if loc]
        assert located and {os.path.basename(loc["file"]) for loc in located} >= {"cute_add.py"}
        assert lines is None or len(page["locs"]) == len(lines)
        assert get_json(client, url + "/s/0")["kind"] == "mlir"


def test_odd_folder_duplicates_and_markup_in_names_are_kept_and_escaped(tmp_path):
    from tests.test_snapshot_pages import get_html, make_site

    folder = tmp_path / "odd"
    folder.mkdir()
    source = (CUTE_PASSES / "cute_add_0_with_loc.mlir").read_text()
    (folder / "k<b>_0_with_loc.mlir").write_text(source)
    (folder / "k<b>_001_Canonicalizer.mlir").write_text((CUTE_PASSES / "cute_add_001_CuteRemoveStaticArgs.mlir").read_text())
    (folder / "k<b>_001_CSE.mlir").write_text((CUTE_PASSES / "cute_add_002_MaterializeTmaMulticast.mlir").read_text())
    client, run = make_site(tmp_path, [folder])
    with client:
        (compilation,) = run["compilations"]
        assert compilation["snapshots"]["mlir"] == 3 and compilation["kernel"] == "k<b>"
        assert any("share a number" in w["message"] for w in run["warnings"])
        html = get_html(client, compilation["url"])
        assert "k<b>" not in html and "k&lt;b&gt;" in html
        for index in range(3):
            assert client.get(compilation["url"] + f"/s/{index}").status_code == 200
