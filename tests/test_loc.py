"""parsers.locations.loc: IR lines -> Python source lines, on real Triton output.

Core tests use the verbatim corpus files in tests/fixtures/loc/ (see NOTE.md there).
Tests marked by the ``corpus`` fixture unpack archives from ../shared/corpus and skip
cleanly when it is absent.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from parsers.locations.loc import LineLocs, SourceLoc, lines_by_source, match_source, resolve

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "loc"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
KERNELS = "/home/dev/kernels/kernels.py"
STANDARD_SUFFIX = "/triton/language/standard.py"

KIND_BY_SUFFIX = {
    ".ttir": "ttir",
    ".ttgir": "ttgir",
    ".source": "source",
    ".glir": "glir",
    ".llir": "llir",
    ".ptx": "ptx",
    ".amdgcn": "amdgcn",
}


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def python_line(source: str, line: int) -> str:
    """The stripped text of 1-based ``line`` of a Python source."""
    return source.split("\n")[line - 1].strip()


def only_line(lines: list[str], needle: str) -> int:
    """Index of the single IR line containing ``needle``."""
    found = [index for index, line in enumerate(lines) if needle in line]
    assert len(found) == 1, (needle, found)
    return found[0]


def all_lines(lines: list[str], needle: str) -> list[int]:
    found = [index for index, line in enumerate(lines) if needle in line]
    assert found, needle
    return found


@pytest.fixture(scope="session")
def kernels_source() -> str:
    return fixture_text("kernels.py.txt")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    """``corpus("sm90_mix")`` -> the unpacked capture folder (unpacked once per session)."""
    unpacked: dict[str, Path] = {}
    root = tmp_path_factory.mktemp("corpus")

    def unpack(name: str) -> Path:
        archive = CORPUS / f"{name}.tar.xz"
        if not archive.is_file():
            pytest.skip(f"corpus archive {archive} not available")
        if name not in unpacked:
            with tarfile.open(archive) as tar:
                tar.extractall(root, filter="data")
            unpacked[name] = root / name
        return unpacked[name]

    return unpack


def cached(capture: Path, file_name: str) -> Path:
    matches = sorted(capture.glob(f"cache/*/{file_name}"))
    assert matches, file_name
    return matches[0]


# ---------------------------------------------------------------- fixtures: TTGIR


def test_every_fixture_gets_one_entry_per_line() -> None:
    for name, kind in [
        ("add_kernel.ttgir", "ttgir"),
        ("add_kernel.llir", "llir"),
        ("add_kernel.ptx", "ptx"),
        ("add_kernel.gfx942.amdgcn", "amdgcn"),
        ("add_kernel.gfx942.llvm_dialect.mlir", "mlir"),
    ]:
        text = fixture_text(name)
        locs = resolve(text, kind)
        assert len(locs) == len(text.split("\n")), name
        assert all(isinstance(line_locs, LineLocs) for line_locs in locs)


def test_ttgir_loads_and_add_map_to_their_kernel_lines(kernels_source: str) -> None:
    lines = fixture_text("add_kernel.ttgir").split("\n")
    locs = resolve("\n".join(lines), "ttgir")

    load_x = locs[only_line(lines, "%x_5 = tt.load")]
    assert load_x.primary == SourceLoc(KERNELS, 18, 9)
    assert load_x.frames == [SourceLoc(KERNELS, 18, 9)]
    assert load_x.name == "x"
    assert python_line(kernels_source, 18) == "x = tl.load(x_ptr + offsets, mask=mask)"

    load_y = locs[only_line(lines, "%y_7 = tt.load")]
    assert (load_y.primary.line, load_y.name) == (19, "y")
    assert python_line(kernels_source, 19) == "y = tl.load(y_ptr + offsets, mask=mask)"

    add = locs[only_line(lines, "arith.addf")]
    assert add.primary == SourceLoc(KERNELS, 20, 33)
    assert add.name is None
    assert python_line(kernels_source, 20) == "tl.store(out_ptr + offsets, x + y, mask=mask)"
    # Columns are the def's column (1) plus the AST col_offset: column 33 is where "x + y" starts.
    assert kernels_source.split("\n")[19][add.primary.col - 1 :].startswith("x + y")

    program_id = locs[only_line(lines, "tt.get_program_id")]
    assert (program_id.primary.line, program_id.name) == (15, "pid")
    assert python_line(kernels_source, 15) == "pid = tl.program_id(axis=0)"


def test_function_header_takes_its_inline_argument_location(kernels_source: str) -> None:
    lines = fixture_text("add_kernel.ttgir").split("\n")
    header = resolve("\n".join(lines), "ttgir")[only_line(lines, "tt.func public @add_kernel(")]
    assert header.primary == SourceLoc(KERNELS, 14, 1)
    assert header.name in {"x_ptr", "y_ptr", "out_ptr", "n_elements"}
    assert python_line(kernels_source, 14).startswith("def add_kernel(")


def test_name_locs_give_variable_names() -> None:
    lines = fixture_text("add_kernel.ttgir").split("\n")
    locs = resolve("\n".join(lines), "ttgir")
    assert {locs[index].name for index in all_lines(lines, "= tt.splat")} == {
        "offsets",
        "mask",
        "x",
        "y",
        None,
    }
    assert locs[only_line(lines, "%mask_3 = arith.cmpi")].name == "mask"
    assert locs[only_line(lines, "%0 = tt.splat %out_ptr")].name is None  # plain FileLineColLoc
    # A bare NameLoc has a name but no frames.
    bare = resolve('%x = foo : i32 loc("x_ptr")', "ttir")[0]
    assert (bare.frames, bare.primary, bare.name) == ([], None, "x_ptr")


def test_unknown_location_gives_empty_frames() -> None:
    lines = fixture_text("add_kernel.ttgir").split("\n")
    locs = resolve("\n".join(lines), "ttgir")
    constant = locs[only_line(lines, "%c1024_i32 = arith.constant 1024")]
    assert lines[only_line(lines, "#loc1 = ")] == "#loc1 = loc(unknown)"
    assert (constant.frames, constant.primary, constant.name) == ([], None, None)
    inline = resolve("  tt.return loc(unknown)", "ttgir")[0]
    assert inline.frames == [] and inline.primary is None


def test_lines_without_an_op_location_are_empty() -> None:
    lines = fixture_text("add_kernel.ttgir").split("\n")
    locs = resolve("\n".join(lines), "ttgir")
    for index, line in enumerate(lines):
        if line.startswith(("#loc", "#blocked", "module ")) or line == "":
            assert locs[index].frames == [] and locs[index].primary is None, line
    # The closing braces carry the func's and module's trailing loc(#loc).
    assert locs[only_line(lines, "  } loc(#loc)")].primary == SourceLoc(KERNELS, 14, 1)


def test_lines_by_source_finds_the_ir_lines_of_a_python_line() -> None:
    lines = fixture_text("add_kernel.ttgir").split("\n")
    by_source = lines_by_source(resolve("\n".join(lines), "ttgir"))
    assert by_source[(KERNELS, 18)] == [
        only_line(lines, "%x = tt.splat"),
        only_line(lines, "%x_4 = tt.addptr"),
        only_line(lines, "%x_5 = tt.load"),
    ]
    assert by_source[(KERNELS, 20)] == [
        only_line(lines, "%0 = tt.splat %out_ptr"),
        only_line(lines, "%1 = tt.addptr"),
        only_line(lines, "arith.addf"),
        only_line(lines, "tt.store"),
    ]
    assert all(file == KERNELS for file, _ in by_source)


# ---------------------------------------------------------------- fixtures: LLVM IR, PTX, AMDGCN


def test_llir_dbg_metadata_maps_instructions(kernels_source: str) -> None:
    lines = fixture_text("add_kernel.llir").split("\n")
    locs = resolve("\n".join(lines), "llir")
    fadds = all_lines(lines, "= fadd float")
    assert {locs[index].primary for index in fadds} == {SourceLoc(KERNELS, 20, 33)}
    ctaid = locs[only_line(lines, "= tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()")]
    assert ctaid.frames == [SourceLoc(KERNELS, 15, 11)]
    assert python_line(kernels_source, 15).startswith("pid = tl.program_id")
    define = locs[only_line(lines, "define ptx_kernel void @add_kernel(")]
    assert define.primary == SourceLoc(KERNELS, 14, None)  # the DISubprogram's def line
    for index, line in enumerate(lines):
        if line.startswith("!"):
            assert locs[index].frames == [], line


def test_ptx_loc_applies_to_following_instructions(kernels_source: str) -> None:
    lines = fixture_text("add_kernel.ptx").split("\n")
    locs = resolve("\n".join(lines), "ptx")
    adds = all_lines(lines, "add.f32")
    assert len(adds) == 8
    assert {locs[index].primary for index in adds} == {SourceLoc(KERNELS, 20, 33)}
    assert locs[only_line(lines, "mov.u32 \t%r25, %ctaid.x;")].primary == SourceLoc(KERNELS, 15, 11)
    assert locs[only_line(lines, "ret;")].primary.line == 14
    # Labels, comments, directives and the DWARF sections after the function carry nothing.
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith((".b8", ".b32", ".section", "$L__", "//", ".reg", ".file")):
            assert locs[index].frames == [], line
    assert python_line(kernels_source, 20).startswith("tl.store(")


def test_amdgcn_file_with_directory_and_name(kernels_source: str) -> None:
    lines = fixture_text("add_kernel.gfx942.amdgcn").split("\n")
    locs = resolve("\n".join(lines), "amdgcn")
    store = locs[only_line(lines, "buffer_store_dwordx4")]
    assert store.primary == SourceLoc(KERNELS, 20, 5)  # .file 1 "/home/dev/kernels" "kernels.py"
    loads = all_lines(lines, "buffer_load_dwordx4")
    assert [locs[index].primary.line for index in loads] == [18, 19]
    assert python_line(kernels_source, 19).startswith("y = tl.load(")
    # ".loc 1 0 0" is "no source line": it and what follows until the next .loc are empty.
    no_line = only_line(lines, ".loc\t1 0 0 is_stmt 0")
    first_instruction = only_line(lines, "s_mov_b64 s[0:1], s[2:3]")
    assert no_line < first_instruction < all_lines(lines, ".loc\t1 16 34")[0]
    assert locs[no_line].frames == [] and locs[first_instruction].frames == []
    # The metadata YAML after the code is not code.
    metadata_start = only_line(lines, ".amdgpu_metadata")
    assert all(line_locs.frames == [] for line_locs in locs[metadata_start:])


def test_llvm_dialect_fused_di_subprogram(kernels_source: str) -> None:
    lines = fixture_text("add_kernel.gfx942.llvm_dialect.mlir").split("\n")
    locs = resolve("\n".join(lines), "mlir")
    assert "#loc20 = loc(fused<#di_subprogram>[#loc])" in lines
    closing = locs[only_line(lines, "  } loc(#loc20)")]
    assert closing.primary == SourceLoc(KERNELS, 14, 1)
    loads = [index for index in all_lines(lines, "rocdl.raw.ptr.buffer.load") if locs[index].name == "x"]
    assert loads and {locs[index].primary.line for index in loads} == {18}
    assert python_line(kernels_source, 18).startswith("x = tl.load(")


# ---------------------------------------------------------------- location syntax not in the corpus
# Hand-written snippets for printed forms the corpus happens not to contain.


def test_inline_callsite_and_fused_with_nested_di_metadata() -> None:
    text = (
        "%0 = llvm.add %a, %b : i32 loc(fused<#llvm.di_subprogram<id = distinct[1]<>, "
        'file = #llvm.di_file<"k.py" in "/d">, name = "f<[x]>", type = !llvm.func<i32 (i32)> >>'
        '[callsite("/site-packages/triton/language/standard.py":43:13 at "/w/k.py":30:5), "/w/k.py":31:1])'
    )
    line_locs = resolve(text, "mlir")[0]
    assert line_locs.frames == [
        SourceLoc("/site-packages/triton/language/standard.py", 43, 13),
        SourceLoc("/w/k.py", 30, 5),
        SourceLoc("/w/k.py", 31, 1),
    ]
    assert line_locs.primary == SourceLoc("/w/k.py", 30, 5)


def test_ranges_cycles_and_strings_are_handled() -> None:
    text = """\
tt.func @k(%a: i32 loc("a"(#loc))) {
  %0 = tt.elementwise_inline_asm {asm_string = "mov loc(#loc9)"} loc("/w/k.py":3:4 to 5:6)
  %1 = foo loc("/w/k.py":7:1 to :9)
  %2 = bar loc(#loc2)
} loc(#loc)
#loc = loc("/w/k.py":1:0)
#loc2 = loc(callsite(#loc3 at #loc))
#loc3 = loc(#loc2)
#loc9 = loc("/w/wrong.py":1:1)"""
    locs = resolve(text, "ttir")
    assert locs[0].primary == SourceLoc("/w/k.py", 1, 0) and locs[0].name == "a"
    assert locs[1].primary == SourceLoc("/w/k.py", 3, 4)  # loc( inside the string is ignored
    assert locs[2].primary == SourceLoc("/w/k.py", 7, 1)
    assert locs[3].frames == [SourceLoc("/w/k.py", 1, 0)]  # the cycle #loc2 <-> #loc3 is cut
    assert locs[4].primary == SourceLoc("/w/k.py", 1, 0)
    assert all(line_locs.frames == [] for line_locs in locs[5:])


def test_primary_falls_back_to_outermost_when_all_frames_are_library() -> None:
    text = (
        'x loc(callsite("/opt/py/site-packages/triton/language/standard.py":196:12 at '
        '"/opt/py/site-packages/triton/language/standard.py":216:16))'
    )
    line_locs = resolve(text, "ttgir")[0]
    assert line_locs.primary == SourceLoc("/opt/py/site-packages/triton/language/standard.py", 216, 16)


def test_llvm_inlined_at_chain_and_missing_metadata_comment() -> None:
    text = """\
  %1 = fadd float %a, %b, !dbg !21
!1 = !DIFile(filename: "k.py", directory: "/w")
!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 24, unit: !0)
!21 = !DILocation(line: 196, column: 12, scope: !22, inlinedAt: !24)
!22 = distinct !DILexicalBlockFile(scope: !4, file: !23, discriminator: 0)
!23 = !DIFile(filename: "standard.py", directory: "/p/site-packages/triton/language")
!24 = !DILocation(line: 32, column: 31, scope: !4)"""
    line_locs = resolve(text, "llir")[0]
    assert line_locs.frames == [
        SourceLoc("/p/site-packages/triton/language/standard.py", 196, 12),
        SourceLoc("/w/k.py", 32, 31),
    ]
    assert line_locs.primary == SourceLoc("/w/k.py", 32, 31)
    mir = resolve("  %38:b32 = INT_PTX_SREG_CTAID_x debug-location !12; kernels.py:15:11", "llvm")[0]
    assert mir.frames == [SourceLoc("kernels.py", 15, 11)]


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        resolve("x", "cubin")


# ---------------------------------------------------------------- match_source


def test_match_source_by_longest_path_suffix() -> None:
    candidates = ["sm90_mix/src/other.py", "sm90_mix/src/kernels.py", "notes/readme.md"]
    assert match_source("/home/dev/kernels/kernels.py", candidates) == "sm90_mix/src/kernels.py"
    assert (
        match_source("/home/dev/kernels/kernels.py", ["x/kernels.py", "up/kernels/kernels.py"])
        == "up/kernels/kernels.py"
    )
    assert match_source("/home/dev/kernels/kernels.py", ["src/kernels.pyc", "kernels.py.bak"]) is None
    assert match_source("/home/dev/kernels/kernels.py", []) is None
    assert match_source("C:\\work\\kernels.py", ["a/work/kernels.py", "b/kernels.py"]) == "a/work/kernels.py"


def test_match_source_finds_inductor_generated_kernels(corpus) -> None:
    capture = corpus("gpu_inductor")
    sources = sorted(str(path.relative_to(capture.parent)) for path in (capture / "src").rglob("*.py"))
    ttgir = cached(capture, "triton_poi_fused_ones_triu_5.ttgir")
    lines = ttgir.read_text().split("\n")
    locs = resolve("\n".join(lines), "ttgir")
    recorded = {frame.file for line_locs in locs for frame in line_locs.frames}
    assert recorded == {
        "/tmp/wl/gpu_inductor/inductor/pb/cpbbigmy5uj45e6vtbp335xxjlmk3tnft4f2ux33obk7l33u653y.py"
    }
    matched = match_source(recorded.pop(), sources)
    assert matched == "gpu_inductor/src/inductor/cpbbigmy5uj45e6vtbp335xxjlmk3tnft4f2ux33obk7l33u653y.py"
    source = (capture.parent / matched).read_text()
    # fused[#loc22 "tmp0"(26:17), #loc23 "tmp0"(26:22)]: both members, primary the first.
    tmp0 = locs[only_line(lines, "%tmp0 = arith.subi")]
    assert [(frame.line, frame.col) for frame in tmp0.frames] == [(26, 17), (26, 22)]
    assert tmp0.name == "tmp0"
    assert python_line(source, tmp0.primary.line) == "tmp0 = x0 + ((-1)*x1)"


# ---------------------------------------------------------------- corpus: bigger real kernels


def test_matmul_ttgir_dot_and_inlined_helpers_map_to_kernel_lines(corpus) -> None:
    capture = corpus("sm90_mix")
    source = (capture / "src" / "kernels.py").read_text()
    lines = cached(capture, "matmul_kernel.ttgir").read_text().split("\n")
    locs = resolve("\n".join(lines), "ttgir")

    dot = locs[only_line(lines, "= ttng.warp_group_dot %")]
    assert dot.primary.file == KERNELS and dot.name == "accumulator"
    assert python_line(source, dot.primary.line) == "accumulator = tl.dot(a, b, accumulator)"

    # callsite(#loc3 standard.py:43 at "num_pid_m"(kernels.py:75)): tl.cdiv inlined.
    cdiv = locs[only_line(lines, "%num_pid_m = arith.addi %M")]
    assert cdiv.frames[0].file.endswith(STANDARD_SUFFIX)
    assert cdiv.frames[-1] == cdiv.primary == SourceLoc(KERNELS, 75, 17)
    assert cdiv.name == "num_pid_m"
    assert python_line(source, 75) == "num_pid_m = tl.cdiv(M, BLOCK_M)"

    loop_bound = locs[only_line(lines, "%0 = arith.addi %K, %c63_i32")]
    assert python_line(source, loop_bound.primary.line) == "for k in range(0, tl.cdiv(K, BLOCK_K)):"

    store = locs[only_line(lines, "tt.store %c_ptrs_87")]
    assert python_line(source, store.primary.line) == "tl.store(c_ptrs, c, mask=c_mask)"

    # Every tl.cdiv is inlined from standard.py, yet no gutter entry points there.
    assert any(frame.file.endswith(STANDARD_SUFFIX) for line_locs in locs for frame in line_locs.frames)
    assert all(line_locs.primary.file == KERNELS for line_locs in locs if line_locs.primary)


def test_matmul_llir_and_ptx_map_wgmma_to_the_dot_line(corpus) -> None:
    capture = corpus("sm90_mix")
    source = (capture / "src" / "kernels.py").read_text()
    dot_line = source.split("\n").index("        accumulator = tl.dot(a, b, accumulator)") + 1

    llir = cached(capture, "matmul_kernel.llir").read_text().split("\n")
    llir_locs = resolve("\n".join(llir), "llir")
    wgmma_calls = all_lines(llir, "tail call void @llvm.nvvm.wgmma.fence.sync.aligned()")
    assert {llir_locs[index].primary for index in wgmma_calls} == {SourceLoc(KERNELS, dot_line, 23)}

    ptx = cached(capture, "matmul_kernel.ptx").read_text().split("\n")
    ptx_locs = resolve("\n".join(ptx), "ptx")
    mma = all_lines(ptx, "wgmma.mma_async.sync")
    assert {ptx_locs[index].primary.line for index in mma} == {dot_line}
    # ".loc 2 43 13, function_name ..., inlined_at 1 75 17": cdiv inlined into num_pid_m's line.
    inlined = [index for index, line in enumerate(ptx) if "inlined_at 1 75 17" in line]
    assert inlined
    for index in inlined:
        assert ptx_locs[index].frames[0].file.endswith(STANDARD_SUFFIX)
        assert ptx_locs[index].primary == SourceLoc(KERNELS, 75, 17)


def test_attention_ptx_follows_nested_inlined_at(corpus) -> None:
    capture = corpus("sm90_mix")
    source = (capture / "src" / "kernels.py").read_text()
    ptx = cached(capture, "attention_fwd_kernel.ptx").read_text().split("\n")
    locs = resolve("\n".join(ptx), "ptx")
    # ".loc 2 196 12 ... inlined_at 2 216 16" after ".loc 2 216 16 ... inlined_at 1 136 32".
    nested = [index for index, line in enumerate(ptx) if "inlined_at 2 216 16" in line]
    assert nested
    for index in nested:
        frames = [(frame.file.endswith(STANDARD_SUFFIX), frame.line) for frame in locs[index].frames]
        assert frames == [(True, 196), (True, 216), (False, 136)]
        assert locs[index].primary.file == KERNELS
    assert "tl.max(qk, 1)" in python_line(source, 136)


def test_amdgcn_inlining_chain_from_the_comment(corpus) -> None:
    capture = corpus("gfx942_mix")
    source = (capture / "src" / "kernels.py").read_text()
    lines = cached(capture, "softmax_kernel.amdgcn").read_text().split("\n")
    locs = resolve("\n".join(lines), "amdgcn")
    # ".loc 2 196 12 ; standard.py:196:12 @[ standard.py:216:16 @[ kernels.py:32:31 ] ]"
    chained = [
        index for index, line in enumerate(lines) if "@[ standard.py:216:16 @[ kernels.py:32:31 ] ]" in line
    ]
    assert chained
    for index in chained + [chained[0] + 1]:  # the .loc line and the v_max after it
        line_locs = locs[index]
        assert [frame.line for frame in line_locs.frames] == [196, 216, 32]
        assert (
            line_locs.frames[0].file
            == "/opt/triton39/lib/python3.11/site-packages/triton/language/standard.py"
        )
        assert line_locs.primary == SourceLoc(KERNELS, 32, 31)
    assert "v_max_f32" in lines[chained[0] + 1]
    assert python_line(source, 32) == "row_minus_max = row - tl.max(row, axis=0)"


def test_llvm_dialect_callsite_of_fused_lexical_blocks(corpus) -> None:
    capture = corpus("gfx942_mix")
    source = (capture / "src" / "kernels.py").read_text()
    text = (capture / "dump.log").read_text()
    lines = text.split("\n")
    locs = resolve(text, "mlir")
    assert len(locs) == len(lines)
    # #loc49 = loc(callsite(#loc43 at #loc44)) with #loc43 = fused<#di_lexical_block_file>[standard.py]
    # and #loc44 = fused<#di_lexical_block_file1>["denominator"(kernels.py:34)], per dump.
    readlanes = all_lines(lines, "%denominator = rocdl.readfirstlane")
    for index in readlanes:
        assert locs[index].frames[0].file.endswith(STANDARD_SUFFIX)
        assert locs[index].primary.file == KERNELS
        assert locs[index].name == "denominator"
        assert python_line(source, locs[index].primary.line) == "denominator = tl.sum(numerator, axis=0)"


@pytest.mark.parametrize("capture_name", ["sm90_mix", "gfx942_mix", "sm90_gluon", "old_3.1_sm90"])
def test_every_cached_ir_file_resolves_line_for_line(corpus, capture_name: str) -> None:
    capture = corpus(capture_name)
    checked = 0
    for path in sorted(capture.glob("cache/*/*")):
        kind = KIND_BY_SUFFIX.get(path.suffix)
        if kind is None:
            continue
        text = path.read_text()
        lines = text.split("\n")
        locs = resolve(text, kind)
        assert len(locs) == len(lines), path
        for line, line_locs in zip(lines, locs, strict=True):
            stripped = line.strip()
            if kind == "llir" and "!dbg !" in line and not line.startswith("!"):
                assert line_locs.primary is not None, (path, line)
            if kind in ("ptx", "amdgcn") and stripped.startswith(".loc\t") and stripped.split()[2] != "0":
                assert line_locs.primary is not None, (path, line)  # line 0 is "no source line"
            if line_locs.primary is not None:
                assert line_locs.primary in line_locs.frames
        checked += 1
    assert checked >= 8
