"""Hardware-op groups past the LLVM lowering (PTX in inline assembly, .ptx files) and tensor
descriptors named per target (TMA on NVIDIA, TDM on AMD gfx1250, neutral elsewhere).

Fixtures are real Triton 3.9 output (tests/fixtures/inline_asm/NOTE.md); the expected counts
are made here by splitting each assembly string into instructions and reading their mnemonics,
independently of app.highlight.hwops's regular expressions.
"""

from __future__ import annotations

import gzip
import re

import pytest

from app import render
from app.highlight.hwops import (
    classify_line,
    classify_lines,
    classify_ptx_line,
    count_groups,
    count_ptx,
    descriptor_group,
    inline_asm_groups,
    inline_asm_groups_ascii,
    retarget,
    text_target,
)
from tests.conftest import FIXTURES
from tests.test_snapshot_pages import compilation_of, get_html, get_json, make_site

ASM = FIXTURES / "inline_asm"
LLVM_DIALECT = (ASM / "scaled_matmul_sm100_llvm_dialect_asm.mlir").read_text()
LLIR_CALLS = (ASM / "scaled_matmul_sm100_asm_calls.llir").read_text()
PTX = gzip.decompress((ASM / "scaled_matmul_sm100.ptx.gz").read_bytes()).decode()
GFX942_TTIR = (ASM / "matmul_descriptor_gfx942_ttir_lines.mlir").read_text()


def group_of(mnemonic: str) -> str | None:
    """The group of a PTX mnemonic, by its leading words (the table in hwops, said plainly)."""
    if mnemonic.startswith(("cp.async.bulk", "cp.reduce.async.bulk", "tensormap.", "fence.proxy.tensormap")):
        return "tma"
    if mnemonic.startswith(("tcgen05.mma", "tcgen05.commit", "wgmma.", "mma.sync")):
        return "mma"
    if mnemonic.startswith("tcgen05."):
        return "tmem"
    if mnemonic.startswith(("mbarrier.", "barrier.", "bar.", "fence.", "membar.")):
        return "barrier"
    if mnemonic.startswith("cp.async."):
        return "async"
    if mnemonic.startswith(("ldmatrix", "stmatrix")):
        return "shared"
    return None


def mnemonics(assembly: str) -> list[str]:
    """Each instruction's mnemonic: split at `;`, escaped newlines and braces, predicates dropped."""
    found = []
    for piece in re.split(r";|\\0A|[{}\n]", assembly):
        words = piece.replace("\\09", " ").split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if words and not words[0].startswith((".", "//")) and not words[0].endswith(":"):
            found.append(words[0])
    return found


def expected_counts(assemblies: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for assembly in assemblies:
        for mnemonic in mnemonics(assembly):
            group = group_of(mnemonic)
            if group:
                counts[group] = counts.get(group, 0) + 1
    return counts


def nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {key: value for key, value in counts.items() if value}


def first_string_after(line: str, keyword: str) -> str:
    return line.split(keyword, 1)[1].split('"', 2)[1]


# -- inline assembly -------------------------------------------------------------------------------


def test_llvm_dialect_inline_asm_is_counted_by_ptx_mnemonic():
    lines = [line for line in LLVM_DIALECT.splitlines() if "llvm.inline_asm" in line]
    expected = expected_counts([first_string_after(line, "llvm.inline_asm") for line in lines])
    assert expected["mma"] >= 8 and expected["tma"] and expected["barrier"] and expected["tmem"]
    assert nonzero(count_groups(LLVM_DIALECT)) == expected
    for line in lines:
        assert classify_line(line) == sorted(
            expected_counts([first_string_after(line, "llvm.inline_asm")]),
            key=["tma", "mma", "barrier", "async", "tmem", "shared"].index,
        ), line


def test_llvm_ir_asm_calls_are_counted_by_ptx_mnemonic():
    lines = LLIR_CALLS.splitlines()
    expected = expected_counts([first_string_after(line, " asm ") for line in lines])
    assert nonzero(count_groups(LLIR_CALLS)) == expected
    block_scaled = next(line for line in lines if "block_scale" in line)
    assert classify_line(block_scaled) == ["mma"]
    tma_load = next(line for line in lines if "cp.async.bulk.tensor" in line)
    assert classify_line(tma_load) == ["tma"]
    plain = next(line for line in lines if '"mov.u32' in line or '"st.global' in line or "ld.global" in line)
    assert classify_line(plain) == []


def test_ptx_file_is_counted_like_the_asm_it_came_from():
    instructions = [line.strip() for line in PTX.splitlines() if line.startswith("\t") and line.strip()]
    expected = expected_counts(instructions)
    assert nonzero(count_ptx(PTX)) == expected
    # every asm string of the .llir reached the PTX: at least as many of each group there
    from_asm = nonzero(count_groups(LLIR_CALLS))
    assert all(expected.get(key, 0) >= value for key, value in from_asm.items())
    mma = next(line for line in PTX.splitlines() if "tcgen05.mma" in line)
    assert classify_ptx_line(mma) == ["mma"]
    rendered = render.analyse_ir("test:hwops:ptx", "ptx", lambda: PTX)
    assert nonzero(rendered.ops) == expected
    assert rendered.op_lines["mma"] == sum(1 for line in instructions if "mma" in expected_counts([line]))


def test_the_bytes_path_finds_the_groups_the_text_path_finds():
    """The op index reads inline assembly from a text's bytes (app/insight/op_terms.py); on the real texts,
    and on copies where one string is hidden behind a word character or glued to another, it must
    give what the str path gives."""
    texts = [LLVM_DIALECT, LLIR_CALLS, GFX942_TTIR]
    texts += [text.replace(" asm ", "_asm ", 1) for text in (LLVM_DIALECT, LLIR_CALLS)]
    texts += [text.replace("llvm.inline_asm", "llvm.inline_asmx", 3) for text in (LLVM_DIALECT,)]
    texts += [text.replace('"', "", 1) for text in (LLVM_DIALECT, LLIR_CALLS)]
    assert inline_asm_groups(LLVM_DIALECT) and inline_asm_groups(LLIR_CALLS)  # the fixtures hold PTX
    for text in texts:
        assert inline_asm_groups_ascii(text.encode("ascii")) == inline_asm_groups(text)


def test_whole_text_classification_equals_the_per_line_one():
    """render's analysis classifies a text's lines in a few whole-text scans (classify_lines); each
    line's groups must be what classify_line gives it, for every target, on real texts with inline
    assembly, descriptors and locations, cut at arbitrary points, and with a descriptor type or an
    assembly call glued to the previous line."""
    logs = [FIXTURES / name for name in ("sm90_add_kernel_dump.log.gz", "llvm_banners_sm90_triton39.log.gz")]
    texts = [LLVM_DIALECT, LLIR_CALLS, GFX942_TTIR, *(gzip.decompress(path.read_bytes()).decode() for path in logs)]
    texts += [text[len(text) // 3 : -len(text) // 3] for text in texts]
    texts += [GFX942_TTIR.replace("\n", " ", 7), LLIR_CALLS.replace("\n  ", " asm ", 9)]
    for text in texts:
        lines = text.split("\n")
        for target in (None, "cuda:90", "hip:gfx1250", "hip:gfx942"):
            assert classify_lines(text, len(lines), target) == [tuple(classify_line(line, target)) for line in lines]
    assert classify_lines("", 0) == [] and classify_lines("tt.dot\n", 1) == [("mma",)]


def test_a_string_that_merely_mentions_an_instruction_is_not_counted():
    # a pass argument or a kernel name is not assembly
    assert nonzero(count_groups('module attributes {note = "tcgen05.mma and mbarrier.init"} {')) == {}
    assert classify_line("  %x = llvm.load %p : !llvm.ptr<3> -> i32  // mbarrier.init") == []


# -- tensor descriptors per target ----------------------------------------------------------------


def test_descriptor_group_per_target():
    assert descriptor_group("cuda:90") == descriptor_group("cuda:100") == "tma"
    assert descriptor_group("cuda:80") == "descriptor"  # no TMA before Hopper
    assert descriptor_group("hip:gfx1250") == "tdm"
    assert descriptor_group("hip:gfx942") == descriptor_group("hip:gfx950") == "descriptor"
    assert descriptor_group(None) == descriptor_group("") == "descriptor"
    assert text_target(LLVM_DIALECT) == "cuda:100"
    assert text_target(GFX942_TTIR) is None  # TTIR names no target


def test_ttir_descriptors_on_amd_are_not_tma():
    ops = [line for line in GFX942_TTIR.splitlines() if re.search(r"= tt\.|^\s+tt\.descriptor", line)]
    assert len(ops) == 6
    assert count_groups(GFX942_TTIR)["descriptor"] == 6
    assert count_groups(GFX942_TTIR, "hip:gfx942")["tma"] == 0
    assert count_groups(GFX942_TTIR, "hip:gfx942")["descriptor"] == 6
    assert count_groups(GFX942_TTIR, "hip:gfx1250")["tdm"] == 6
    assert count_groups(GFX942_TTIR, "cuda:90")["tma"] == 6
    for line in ops:
        assert classify_line(line, "hip:gfx942") == ["descriptor"]
        assert classify_line(line, "hip:gfx1250") == ["tdm"]
        assert classify_line(line, "cuda:90") == ["tma"]
    # a module's own ttg.target wins over the caller's guess
    with_target = 'module attributes {ttg.target = "hip:gfx1250"} {\n' + GFX942_TTIR
    assert count_groups(with_target, "cuda:90")["tdm"] == 6


def test_retarget_moves_only_descriptor_counts():
    counts = {"descriptor": 4, "tma": 1, "tdm": 0, "mma": 2}
    assert retarget(counts, "cuda:90") == {"descriptor": 0, "tma": 5, "tdm": 0, "mma": 2}
    assert retarget(counts, "hip:gfx1250") == {"descriptor": 0, "tma": 1, "tdm": 4, "mma": 2}
    assert retarget(counts, "hip:gfx942") == counts
    assert counts["descriptor"] == 4  # not changed in place


# -- pages, on corpus captures ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from tests.conftest import corpus_archive

    archives = [corpus_archive(name) for name in ("sm90_gluon", "sm90_mix", "gfx1250_tdm")]
    client, run = make_site(tmp_path_factory.mktemp("hwops"), archives)
    with client:
        yield client, run


def _snapshots(client, compilation: dict) -> list[dict]:
    return get_json(client, compilation["url"])["snapshots"]


def test_op_columns_do_not_drop_to_zero_at_the_llvm_lowering(site):
    client, run = site
    compilation = compilation_of(run, "gluon_wgmma_kernel")
    rows = _snapshots(client, compilation)
    last = rows[-1]  # the LLVM dialect, where wgmma, TMA and mbarriers are PTX strings
    text = client.get(last["raw_url"]).text
    assert "llvm.inline_asm" in text and "wgmma" in text
    assert last["ops"]["mma"] > 0 and last["ops"]["tma"] > 0 and last["ops"]["barrier"] > 0
    page = get_html(client, last["url"])
    assert 'class="op-dot hw-mma"' in page


def test_descriptor_ops_count_as_the_compilations_engine(site):
    client, run = site
    nvidia = _snapshots(client, compilation_of(run, "matmul_descriptor_kernel"))
    assert all(row["ops"]["descriptor"] == 0 and row["ops"]["tdm"] == 0 for row in nvidia)
    assert nvidia[0]["ops"]["tma"] > 0  # TTIR, before the target is named: TMA on cuda:90
    amd = [c for c in run["compilations"] if c["target"] == "hip:gfx1250"]
    assert amd
    for compilation in amd:
        rows = _snapshots(client, compilation)
        assert all(row["ops"]["tma"] == 0 and row["ops"]["descriptor"] == 0 for row in rows)
        assert any(row["ops"]["tdm"] for row in rows)
    page = get_html(client, compilation_of(run, "matmul_descriptor_kernel")["url"])
    assert "Tensor descriptor" not in page
