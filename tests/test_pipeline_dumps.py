"""Dumps of other pipelines and of LLVM's own tools, and Triton 3.8's LLVM dumps: every banner is a
snapshot with its scope (module, function, loop, machine function, op), none is damaged, loop and
function dumps are compared with the previous dump of the same scope, and LLVM's pass-manager trace
lines stay out of bodies. All inputs are real captures (tests/fixtures/*.note says how each was made).
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import re
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.settings import Settings
from app.store.blobs import BlobReader
from app.store.models import Compilation, Snapshot
from app.web.app import create_app
from parsers.logs import scopes
from parsers.logs.log import scan_log
from parsers.records import Dump
from tests.conftest import FIXTURES, ingest_paths

_LLVM_BANNER = re.compile(rb"^(?:; |# )?\*\*\* IR Dump ", re.MULTILINE)
_MLIR_BANNER = re.compile(rb"^// -----// IR Dump ", re.MULTILINE)
_TRACE = re.compile(rb"^(?:Running (?:pass|analysis): |Invalidating |Clearing all analysis|Skipping pass)", re.MULTILINE)


def client_for(db, tmp_path) -> TestClient:
    return TestClient(create_app(Settings(db_url=db.url, load_demo=False, data_dir=tmp_path)))


def fixture_bytes(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".xz"):
        return lzma.decompress(data)
    return data


def ingest_log(db, tmp_path, data: bytes, name: str = "dump.log") -> dict:
    path = tmp_path / name
    path.write_bytes(data)
    return ingest_paths(db, [path])


def snapshots_of(db, run: dict) -> list[list[Snapshot]]:
    """Per compilation (in order), its snapshots."""
    with db.session() as session:
        compilations = session.scalars(
            select(Compilation).where(Compilation.run_id == run["run"]).order_by(Compilation.ordinal)
        ).all()
        result = []
        for compilation in compilations:
            rows = session.scalars(
                select(Snapshot).where(Snapshot.compilation_pk == compilation.pk).order_by(Snapshot.index)
            ).all()
            session.expunge_all()
            result.append(rows)
        return result


def assert_like_with_like(snapshots: list[Snapshot]) -> None:
    """Each snapshot is compared with an earlier one of the same scope kind, and `changed` says
    whether its body differs from that one's."""
    by_index = {s.index: s for s in snapshots}
    for snapshot in snapshots:
        if snapshot.base_index is None:
            assert snapshot.changed
            continue
        base = by_index[snapshot.base_index]
        assert base.index < snapshot.index
        assert base.scope_kind == snapshot.scope_kind
        assert snapshot.changed == (base.blob != snapshot.blob)


@pytest.mark.parametrize(
    ("name", "when", "levels"),
    [
        ("opt14_newpm_O2_after_all.log.gz", "after", {"module", "function", "loop"}),
        ("opt14_newpm_O2_before_all.log.gz", "before", {"module", "function", "loop"}),
        ("opt14_legacy_O2_after_all.log.gz", "after", {"module", "function", "loop"}),
        ("opt14_legacy_bitcode_warning.log.gz", "after", {"module", "function", "loop"}),
        ("llvm_old_layout_derived.log.gz", "after", {"module", "function", "loop"}),
        ("opt14_newpm_O2_module_scope.log.gz", "after", {"module"}),
        ("llc14_after_all.log.gz", "after", {"module", "function", "loop", "machine"}),
    ],
)
def test_an_llvm_tool_log_is_one_compilation_with_one_snapshot_per_banner(db, tmp_path, name, when, levels):
    data = fixture_bytes(name)
    banners = len(_LLVM_BANNER.findall(data))
    run = ingest_log(db, tmp_path, data)
    assert run["damaged"] == 0 and not run["warnings"]
    (compilation,) = run["compilations"]
    assert compilation["snapshots"] == {"mlir": 0, "internal": 0, "llvm": banners}
    assert compilation["target"] == "x86_64-pc-linux-gnu"
    (snapshots,) = snapshots_of(db, run)
    assert {s.when for s in snapshots} == {when}
    assert {s.scope_kind for s in snapshots} == levels
    assert all(s.stage == "llvm-ir" for s in snapshots)
    assert_like_with_like(snapshots)


def test_opt_new_pm_loop_dumps_are_kept_and_diffed_against_the_same_loop(db, tmp_path):
    data = fixture_bytes("opt14_newpm_O2_after_all.log.gz")
    loop_banners = len(re.findall(rb"^\*\*\* IR Dump After \S+ on Loop at depth", data, re.MULTILINE))
    assert loop_banners == 30
    run = ingest_log(db, tmp_path, data)
    (snapshots,) = snapshots_of(db, run)
    loops = [s for s in snapshots if s.scope_kind == "loop"]
    assert len(loops) == loop_banners
    assert all(s.scope.startswith("Loop at depth 1") for s in loops)
    # Two functions, one loop each: every loop dump but each function's first has a loop dump as base.
    assert sum(1 for s in loops if s.base_index is None) == 2
    with client_for(db, tmp_path) as client:
        loop = next(s for s in loops if s.base_index is not None)
        page = client.get(f"/runs/{run['run']}/c/1/s/{loop.index}.json").json()
        assert page["scope_kind"] == "loop" and page["base"] == loop.base_index
        html = client.get(f"/runs/{run['run']}/c/1/s/{loop.index}").text
        assert '<span class="chip scope-kind"' in html and ">loop</span>" in html
        diff = client.get(page["diff_prev_url"] + ".json")
        assert diff.status_code == 200
        nav = diff.json()["navigation"]
        assert nav["adjacent"] and nav["count"] == sum(1 for s in snapshots if s.base_index is not None)


def test_legacy_cgscc_banners_with_the_body_on_their_line_keep_that_line(db, tmp_path):
    data = fixture_bytes("opt14_legacy_O2_after_all.log.gz")
    glued = re.findall(rb"^\*\*\* IR Dump After [^\n]*\*\*\*(; Function Attrs[^\n]*)\n", data, re.MULTILINE)
    assert glued
    dumps = [r for r in scan_log(io.BytesIO(data)) if isinstance(r, Dump)]
    starts = [d.body for d in dumps if d.header.raw.endswith("***") and d.body.startswith(b"; Function Attrs")]
    assert len(starts) >= len(glued)
    assert sum(1 for d in dumps if scopes.is_null_function(d.body)) >= 1  # "Printing <null> Function"
    assert not any(d.damage for d in dumps)


def test_a_command_run_twice_into_one_log_is_two_compilations(db, tmp_path):
    opt = fixture_bytes("opt14_newpm_O2_after_all.log.gz")
    llc = fixture_bytes("llc14_after_all.log.gz")
    run = ingest_log(db, tmp_path, opt + opt + llc)
    counts = [c["snapshots"]["llvm"] for c in run["compilations"]]
    assert counts == [200, 200, len(_LLVM_BANNER.findall(llc))]
    assert [c["kernel"] for c in run["compilations"]] == ["saxpy.ll", "saxpy.ll", "saxpy.O2.ll"]


def test_an_iree_print_ir_after_all_log_has_one_snapshot_per_banner(db, tmp_path):
    data = fixture_bytes("iree_simple_mul_after_all.log.gz")
    banners = len(_MLIR_BANNER.findall(data))
    assert banners == 755
    run = ingest_log(db, tmp_path, data)
    assert run["damaged"] == 0 and not run["warnings"]
    (compilation,) = run["compilations"]
    assert compilation["kernel"] == "simple_mul" and compilation["status"] == "ok"
    assert compilation["snapshots"] == {"mlir": banners, "internal": 0, "llvm": 0}
    (snapshots,) = snapshots_of(db, run)
    kinds = Counter(s.scope_kind for s in snapshots)
    assert set(kinds) == {"module", "function", "op"}
    assert {s.stage for s in snapshots} == {"mlir"}
    functions = [s for s in snapshots if s.scope_kind == "function"]
    assert any(s.scope.startswith("util.func @") for s in functions)
    assert_like_with_like(snapshots)
    with client_for(db, tmp_path) as client:
        for index in (0, functions[0].index, next(s.index for s in snapshots if s.scope_kind == "op")):
            page = client.get(f"/runs/{run['run']}/c/1/s/{index}")
            assert page.status_code == 200
        assert client.get(f"/runs/{run['run']}/c/1.json").status_code == 200


def test_an_iree_log_with_debuginfo_keeps_every_op_dump_whole(db, tmp_path):
    """--mlir-print-debuginfo: an op printed alone ends with its location, `} loc(...)`."""
    data = fixture_bytes("iree_matmul_debuginfo.log.gz")
    banners = len(_MLIR_BANNER.findall(data))
    run = ingest_log(db, tmp_path, data)
    assert run["damaged"] == 0 and not run["warnings"]
    (compilation,) = run["compilations"]
    assert (compilation["kernel"], compilation["status"]) == ("matmul", "ok")
    assert compilation["snapshots"] == {"mlir": banners, "internal": 0, "llvm": 0} and banners == 33
    (snapshots,) = snapshots_of(db, run)
    assert {s.scope_kind for s in snapshots} == {"module", "function", "op"}
    assert_like_with_like(snapshots)


def test_op_scoped_banners_over_module_bodies_keep_their_scope(db, tmp_path):
    run = ingest_log(db, tmp_path, fixture_bytes("iree_opt_module_scope.log"))
    assert run["damaged"] == 0
    (snapshots,) = snapshots_of(db, run)
    assert [(s.pass_name, s.scope, s.scope_kind) for s in snapshots] == [
        ("CanonicalizerPass", "func.func @simple_mul", "module"),
        ("CSEPass", "func.func @simple_mul", "module"),
    ]


def test_triton38_llvm_dumps_all_kept_with_loops_and_no_pass_manager_lines(db, tmp_path):
    data = fixture_bytes("triton38_matmul_llvm_cuda100.log.xz")
    llvm_banners = len(_LLVM_BANNER.findall(data))
    assert _TRACE.search(data)  # the capture holds LLVM's pass-manager trace
    run = ingest_log(db, tmp_path, data)
    assert run["damaged"] == 0
    (compilation,) = run["compilations"]
    assert compilation["kernel"] == "matmul_kernel" and compilation["target"] == "cuda:100"
    assert compilation["snapshots"]["llvm"] == llvm_banners == 211
    (snapshots,) = snapshots_of(db, run)
    llvm = [s for s in snapshots if s.kind == "llvm"]
    reader = BlobReader()
    with db.session() as session:
        for snapshot in llvm:
            assert not _TRACE.search(reader.get(session, snapshot.blob))
    loops = [s for s in llvm if s.scope_kind == "loop"]
    new_pm_loops = [s for s in loops if s.scope.startswith("loop %<unnamed loop> in function matmul_kernel")]
    legacy_loops = {s.pass_name for s in loops} & {"Canonicalize Freeze Instructions in Loops", "Loop Strength Reduction"}
    assert new_pm_loops and len(legacy_loops) == 2
    legacy_loop_banners = re.findall(rb"^\*\*\* IR Dump After [^\n]*\*\*\*\n; Preheader:", data, re.MULTILINE)
    assert len(loops) == len(re.findall(rb"^; \*\*\* IR Dump After [^\n]* on loop ", data, re.MULTILINE)) + len(
        legacy_loop_banners
    )
    assert_like_with_like(snapshots)
    # What the trace says is kept: passes that ran without a dump, in order.
    traced = [json.loads(s.trace) for s in llvm if s.trace]
    assert any("ModuleInlinerWrapperPass on [module]" in passes for passes in traced)


def test_a_fork_running_a_pass_before_the_inliner_is_one_compilation_per_compile(db, tmp_path):
    """A Triton fork's own first pass (TLX's TritonTLXFixup) starts the compile it runs in; the same
    kernel compiled again starts again there (fixture derived from a real compile:
    tests/fixtures/make_fork_first_pass.py)."""
    data = fixture_bytes("fork_first_pass_derived.log.gz")
    run = ingest_log(db, tmp_path, data)
    assert run["damaged"] == 0
    assert [(c["kernel"], c["status"], c["snapshots"]) for c in run["compilations"]] == [
        ("add_kernel", "ok", {"mlir": 77, "internal": 2, "llvm": 0}),
        ("add_kernel", "ok", {"mlir": 77, "internal": 2, "llvm": 0}),
    ]
    for snapshots in snapshots_of(db, run):
        assert [s.pass_name for s in snapshots[:2]] == ["TritonTLXFixup", "InlinerPass"]


def test_a_pasted_dump_with_its_first_line_on_the_banner_line_is_a_snapshot_or_damaged(db, tmp_path):
    """The newline after the banner was lost in the paste: the rest of the banner's line is the body's
    first line. Whole, it is a snapshot; cut off mid-line, it is counted as damaged. Never lost."""
    data = fixture_bytes("sm90_add_kernel_dump.log.gz")
    dump = data[: data.index(b"\n// -----// IR Dump ", 1) + 1]
    newline = dump.index(b"\n")
    pasted = dump[:newline] + dump[newline + 1 :]
    run = ingest_log(db, tmp_path, pasted, "whole.log")
    assert run["damaged"] == 0
    (compilation,) = run["compilations"]
    assert compilation["snapshots"]["mlir"] == 1
    ((snapshot,),) = snapshots_of(db, run)
    with db.session() as session:
        assert BlobReader().get(session, snapshot.blob) == dump[newline + 1 :].rstrip(b"\n")
    run = ingest_log(db, tmp_path, pasted[: len(pasted) // 2], "cut.log")
    assert run["damaged"] == 1 and sum(c["snapshots"]["mlir"] for c in run["compilations"]) == 0
