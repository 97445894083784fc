"""Dump forms of other tools and of Triton forks (issue 25 §5), at the parsers' level: each banner is
one snapshot, none intact is called damaged, and none vanishes. The fixtures are real captures or, where
no tool at hand prints the form, derived from one (each `.note` says which and how).
"""

from __future__ import annotations

import gzip
import io
import lzma
import re

import pytest

from parsers.logs import scopes
from parsers.logs.compilations import CompilationGrouper, CompilationRecord
from parsers.logs.log import body_damage, scan_log
from parsers.records import Dump, UnknownBanner
from tests.conftest import FIXTURES

_BANNER = re.compile(rb"^(?:// -----// (?:\S+ internal )?IR Dump |(?:; |# )?\*\*\* IR Dump )", re.MULTILINE)


def fixture_bytes(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    if name.endswith(".xz"):
        return lzma.decompress(data)
    return gzip.decompress(data) if name.endswith(".gz") else data


def scanned(data: bytes) -> tuple[list[Dump], list[UnknownBanner], list[CompilationRecord]]:
    """The log's dumps, unknown banners and compilations, as the ingest gets them from parsers/: an
    intact dump is a snapshot, a damaged one is counted and reported (app/ingest/log_reader.py)."""
    dumps, unknown = [], []
    grouper = CompilationGrouper()
    for record in scan_log(io.BytesIO(data)):
        if isinstance(record, Dump):
            dumps.append(record)
            if not record.damage:
                grouper.add(record, str(hash(record.body)))
            elif record.header.failed:
                grouper.mark_current_failed(record.header)
        elif isinstance(record, UnknownBanner):
            unknown.append(record)
    return dumps, unknown, grouper.compilations


def assert_one_intact_snapshot_per_banner(data: bytes) -> tuple[list[Dump], list[CompilationRecord]]:
    dumps, unknown, compilations = scanned(data)
    assert len(dumps) == len(_BANNER.findall(data)) and not unknown
    assert [(dump.line, dump.damage) for dump in dumps if dump.damage] == []
    assert sum(len(compilation.snapshots) for compilation in compilations) == len(dumps)
    return dumps, compilations


# --------------------------------------------------------------------------- --mlir-print-debuginfo


def test_op_scoped_dumps_with_debuginfo_end_with_the_ops_location_and_are_intact():
    data = fixture_bytes("iree_matmul_debuginfo.log.gz")
    dumps, compilations = assert_one_intact_snapshot_per_banner(data)
    assert len(dumps) == 33
    (compilation,) = compilations
    assert (compilation.kernel, compilation.status) == ("matmul", "ok")
    op_dumps = [dump for dump in dumps if scopes.is_mlir_op_body(dump.body)]
    assert len(op_dumps) == 23
    assert all(re.search(rb"\n\} loc\(.*\)$", dump.body) for dump in op_dumps)
    levels = {scopes.level_and_name(dump.header, dump.body)[0] for dump in dumps}
    assert levels == {scopes.MODULE, scopes.FUNCTION, scopes.OP}


OP_WITH_REGIONS = b"""hal.executable private @dispatch {
  hal.executable.variant public @cpu target(#target) {
    builtin.module {
      func.func @f() {
        return loc(#loc2)
      } loc(#loc1)
    } loc(#loc1)
  } loc(#loc1)
}"""


@pytest.mark.parametrize(
    "end",
    [
        b'} loc("k.mlir":1:1)',
        (
            b'} loc(#loc)\n#loc = loc("k.mlir":1:1)\n#loc1 = loc("k.mlir":2:3)\n'
            b"#loc2 = loc(callsite(#loc at #loc1))"
        ),
        b'} loc(callsite("k.mlir":2:13 at "k.mlir":1:1))',
        b'} loc(fused<#llvm.di_subprogram<name = "f(x)", file = <"k.mlir" in "/t">>>["k.mlir":1:1])',
        b'}) {sym_name = "dispatch"} : () -> () loc("k.mlir":1:1)',
        b"}",
    ],
)
def test_any_op_dump_may_end_with_its_location_aliases_or_generic_form(end):
    """Whatever follows the op's closing brace on its line, with or without #loc tables after it."""
    body = OP_WITH_REGIONS[: OP_WITH_REGIONS.rfind(b"\n}") + 1] + end
    if b"#loc =" not in end:
        body = re.sub(rb" loc\(#loc\d\)", b"", body)
    if end.startswith(b"})"):
        body = body.replace(b"hal.executable private @dispatch {", b'"hal.executable"() ({', 1)
    assert scopes.is_mlir_op_body(body)
    assert body_damage(body, "mlir") is None


@pytest.mark.parametrize(
    "cut",
    [
        b'} loc("k.mlir":1',
        b'} loc(callsite("k.mlir":2:13 at "k.mlir":1:1)',
        b'} loc(fused["k.mlir":1:1)',
        b"  } loc(#loc1)",
    ],
)
def test_an_op_dump_cut_inside_its_last_line_is_still_damaged(cut):
    body = re.sub(rb" loc\(#loc\d\)", b"", OP_WITH_REGIONS[: OP_WITH_REGIONS.rfind(b"\n}") + 1]) + cut
    assert body_damage(body, "mlir") == scopes.OP_END


# --------------------------------------------------------------------------- legacy LLVM printers


def test_opt_legacy_log_after_its_bitcode_warning_is_one_compilation():
    data = fixture_bytes("opt14_legacy_bitcode_warning.log.gz")
    assert data.startswith(b"WARNING: You're attempting to print out a bitcode file.")
    dumps, compilations = assert_one_intact_snapshot_per_banner(data)
    assert len(dumps) == 219
    assert [(c.kernel, c.status, len(c.snapshots)) for c in compilations] == [("saxpy.ll", "ok", 219)]


def test_old_legacy_layout_module_on_the_banner_line_and_comment_labels_are_intact():
    data = fixture_bytes("llvm_old_layout_derived.log.gz")
    glued = re.findall(rb"^\*\*\* IR Dump After ([^\n]*?) \*\*\*; ModuleID", data, re.MULTILINE)
    assert len(glued) == 16
    dumps, compilations = assert_one_intact_snapshot_per_banner(data)
    modules = [dump for dump in dumps if dump.body.startswith(b"; ModuleID = 'saxpy.ll'")]
    assert len(modules) == 16 and all(dump.header.raw.endswith("***") for dump in modules)
    assert [dump.header.pass_name for dump in modules] == [name.decode() for name in glued]
    (compilation,) = compilations
    levels = [snapshot.level for snapshot in compilation.snapshots]
    assert (levels.count(scopes.MODULE), levels.count(scopes.LOOP)) == (16, 31)
    # An unnamed block opens the loop dump: its label names the loop, as a named one does.
    unnamed = {dump.line for dump in dumps if dump.body.startswith(b"; <label>:")}
    loops = [s for s in compilation.snapshots if s.line in unnamed]
    assert len(loops) == 8 and {s.level for s in loops} == {scopes.LOOP}
    assert all(re.fullmatch(r"%\d+ in (saxpy|dot)", s.unit) for s in loops)


def test_a_legacy_banner_without_its_argument_is_not_a_broken_new_pm_banner():
    """"*** IR Dump After X on F ***" in a log of "; ***" banners lost its "; " to other output; a
    legacy banner names no unit, with or without its pass argument, and is whole."""
    function = b"define void @f() {\n  ret void\n}\n"
    new_pm = b"; *** IR Dump After InstCombinePass on f ***\n" + function
    for banner, damaged in [
        (b"*** IR Dump After InstCombinePass on f ***", True),
        (b"*** IR Dump After Combine redundant instructions ***", False),
        (b"*** IR Dump After Combine redundant instructions (instcombine) ***", False),
    ]:
        dumps, _, _ = scanned(new_pm + banner + b"\n" + function)
        assert [bool(dump.damage) for dump in dumps] == [False, damaged], banner


# --------------------------------------------------------------------------- Triton forks, failures


def test_a_forks_own_first_pass_starts_the_compilation_it_runs_in():
    """TLX runs TritonTLXFixup before the Inliner: each compile of the kernel (two here) is one
    compilation from that first dump, none is "partial" and none holds the next compile's head."""
    data = fixture_bytes("fork_first_pass_derived.log.gz")
    dumps, compilations = assert_one_intact_snapshot_per_banner(data)
    firsts = [dump.line for dump in dumps if dump.header.pass_name == "TritonTLXFixup"]
    assert len(firsts) == 2
    assert [(c.kernel, c.status, c.status_reason, c.first_line) for c in compilations] == [
        ("add_kernel", "ok", None, firsts[0]),
        ("add_kernel", "ok", None, firsts[1]),
    ]
    for compilation in compilations:
        passes = [snapshot.header.pass_name for snapshot in compilation.snapshots]
        assert passes[:2] == ["TritonTLXFixup", "InlinerPass"] and passes.count("TritonTLXFixup") == 1
        assert (compilation.count("mlir"), compilation.count("internal")) == (77, 2)
        assert compilation.stage == "llvm-dialect" and compilation.target == "cuda:90"


def test_a_log_that_starts_in_the_middle_of_a_compile_is_still_partial():
    """Without an Inliner after it, a compile's first dump is where the log's head was cut off."""
    data = fixture_bytes("sm90_add_kernel_dump.log.gz")
    cut = [match.start() for match in re.finditer(rb"^// -----// IR Dump ", data, re.MULTILINE)][5]
    _, _, compilations = scanned(data[cut:] + data)
    assert [(c.kernel, c.status, len(c.snapshots)) for c in compilations] == [
        ("add_kernel", "partial", 73),
        ("add_kernel", "ok", 78),
    ]
    assert compilations[0].status_reason == "the log starts in the middle of this compilation"


def test_a_failure_inside_a_nested_pipeline_is_one_failed_compilation_naming_the_inner_pass():
    data = fixture_bytes("nested_failure_derived.log.xz")
    failed = re.findall(rb"^// -----// IR Dump After (\w+) Failed", data, re.MULTILINE)
    assert failed == [b"TritonGPUPartitionScheduling", b"TritonGPUAutomaticWarpSpecialization"]
    _, compilations = assert_one_intact_snapshot_per_banner(data)
    (compilation,) = compilations
    assert (compilation.kernel, compilation.status) == ("matmul_kernel", "failed")
    assert compilation.failed_pass == "TritonGPUPartitionScheduling"
    assert [s.header.pass_name for s in compilation.snapshots if s.header.failed] == [
        name.decode() for name in failed
    ]


# --------------------------------------------------------------------------- pasted dumps


def _pasted(dump: bytes) -> bytes:
    """A dump as pasted with its banner's newline lost: the first IR line sits on the banner line."""
    newline = dump.index(b"\n")
    return dump[:newline] + dump[newline + 1 :]


def _first_dump(name: str, banner: bytes = b"// -----// IR Dump ") -> bytes:
    """The fixture's first dump whose banner starts so, whole."""
    data = fixture_bytes(name)
    starts = [match.start() for match in _BANNER.finditer(data)] + [len(data)]
    first = next(index for index, start in enumerate(starts) if data.startswith(banner, start))
    return data[starts[first] : starts[first + 1]]


@pytest.mark.parametrize(
    ("name", "banner"),
    [
        ("sm90_add_kernel_dump.log.gz", b"// -----// IR Dump "),
        ("iree_matmul_debuginfo.log.gz", b"// -----// IR Dump "),
        ("opt14_newpm_O2_module_scope.log.gz", b"*** IR Dump "),
        ("llvm_banners_sm90_triton39.log.gz", b"; *** IR Dump "),
        ("llvm_banners_sm90_triton39.log.gz", b"# *** IR Dump "),
    ],
)
def test_a_pasted_dump_with_its_first_line_on_the_banner_line_is_kept(name, banner):
    whole = _first_dump(name, banner)
    original = scanned(whole)[0][0]
    for paste in (_pasted(whole), b"some text before it\n" + _pasted(whole) + whole):
        dumps, unknown, compilations = scanned(paste)
        assert not unknown and [dump.damage for dump in dumps] == [None] * len(_BANNER.findall(b"\n" + paste))
        assert (dumps[0].header, dumps[0].body) == (original.header, original.body)
        assert sum(len(c.snapshots) for c in compilations) == len(dumps)


def test_a_pasted_dump_cut_off_mid_line_is_counted_as_damaged_not_lost():
    paste = _pasted(_first_dump("sm90_add_kernel_dump.log.gz"))
    for cut in (len(paste) // 3, len(paste) * 2 // 3, paste.index(b"//----- //") + 20):
        cut = cut if paste[cut - 1 : cut] != b"\n" else cut + 1
        dumps, unknown, _ = scanned(paste[:cut])
        assert not unknown and len(dumps) == 1
        assert dumps[0].truncated and dumps[0].damage == "the log ends inside this dump"


# MLIR prints type aliases (`!name = type`) before attribute aliases and the module; ClangIR's dumps
# open so. Written out here: no ClangIR build is at hand to capture one.
_TYPE_ALIAS_DUMP = (
    b"// -----// IR Dump After CIRCanonicalize (cir-canonicalize) ('builtin.module' operation) //----- //\n"
    b"!s32i = !cir.int<s, 32>\n#loc = loc(\"t.c\":1:1)\nmodule {\n  cir.func @f() -> !s32i {\n"
    b"    %0 = cir.const #cir.int<1> : !s32i loc(#loc)\n    cir.return %0 : !s32i loc(#loc)\n  } loc(#loc)\n} loc(#loc)\n\n"
)


@pytest.mark.parametrize("glue", [b"", b" ", b"\t "])
def test_a_dump_opening_with_a_type_alias_is_kept_also_pasted_onto_its_banner(glue):
    original = scanned(_TYPE_ALIAS_DUMP)[0]
    assert len(original) == 1 and original[0].damage is None
    newline = _TYPE_ALIAS_DUMP.index(b"\n")
    for paste in (_TYPE_ALIAS_DUMP[:newline] + glue + _TYPE_ALIAS_DUMP[newline + 1:],
                  b"text before\n" + _TYPE_ALIAS_DUMP[:newline] + glue + _TYPE_ALIAS_DUMP[newline + 1:]):
        dumps, unknown, compilations = scanned(paste)
        assert not unknown and [dump.damage for dump in dumps] == [None]
        assert dumps[0].body == original[0].body and dumps[0].header.pass_name == "CIRCanonicalize"
        assert len(compilations) == 1
