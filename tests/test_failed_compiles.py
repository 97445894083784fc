"""Failed compiles in Triton 3.8 / 3.9 logs, on real captures (tests/fixtures/triton3*_failures_*.log.gz,
made by tests/fixtures/make_triton38_captures.py; see their .note files).

- code generation killed by `LLVM ERROR` after all MLIR passes ran: that compilation failed, with the
  LLVM error as its reason;
- a failing MLIR pass: its diagnostics, the reproducer and the "IR Dump After X Failed" belong to the
  compilation in progress; the IR at the failure is its last snapshot, marked failed; the pass is named;
- AMD compiles failing before any dump: one failed attempt per kernel, never one per helper;
- pass banners of anonymous-namespace passes, and kernel symbols MLIR quotes.
"""

from __future__ import annotations

import gzip
import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from parsers.logs.log import body_damage, scan_log
from parsers.logs.mlir_dump import parse_header
from parsers.logs.reproducer import find_reproducer
from parsers.records import Dump, GapBlock
from tests.conftest import FIXTURES, form_token, fresh_db_url, ingest_paths

NVIDIA_38 = FIXTURES / "triton38_failures_nvidia.log.gz"
AMD_38 = FIXTURES / "triton38_failures_amd.log.gz"
NVIDIA_39 = FIXTURES / "triton39_failures_nvidia.log.gz"
KERNELS = FIXTURES / "triton38_kernels.py"  # the source the captures compiled (their #loc paths end so)
HELPERS = {"tile_mask_offsets", "request_cancel", "read_cancel"}


def _unzipped(path: Path, tmp_path: Path) -> Path:
    """The fixture as a plain .log file (an upload of a .gz is unpacked the same way; this keeps the
    log's name ending in .log)."""
    plain = tmp_path / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    return plain


def _banners(path: Path) -> dict[str, int]:
    counts = {"mlir": 0, "internal": 0}
    with gzip.open(path, "rt", encoding="utf-8") as log:
        for line in log:
            if line.startswith("// -----// "):
                counts["internal" if " internal IR Dump " in line else "mlir"] += 1
    return counts


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each fixture ingested with the kernels' source (so diagnostics can name functions), and the AMD
    one also without it."""
    from app.store.db import Database

    tmp = tmp_path_factory.mktemp("failed-compiles")
    database = Database(fresh_db_url(tmp))
    logs = {path: _unzipped(path, tmp) for path in (NVIDIA_38, AMD_38, NVIDIA_39)}
    result = {path.name: ingest_paths(database, [logs[path], KERNELS]) for path in logs}
    result["amd without source"] = ingest_paths(database, [logs[AMD_38]])
    yield result
    database.dispose()


def _by_target(run: dict) -> dict[tuple[str | None, str | None], dict]:
    return {(c["kernel"], c["target"]): c for c in run["compilations"]}


def test_llvm_error_in_code_generation_fails_the_compile_in_progress(runs):
    run = runs[NVIDIA_38.name]
    tmem = _by_target(run)[("tmem_round_trip_kernel", "cuda:90")]
    assert tmem["status"] == "failed"
    assert tmem["status_reason"] == "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.ld"
    assert tmem["snapshots"]["mlir"] == 30  # every MLIR pass ran before the abort
    owned = [d for d in run["compilation_diagnostics"] if d["kind"] == "llvm"]
    assert {(d["kernel"], d["message"]) for d in owned} == {
        ("tmem_round_trip_kernel", "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.ld"),
        ('add kernel <em>&"x"', "LLVM ERROR: Symbol name with unsupported characters"),
    }
    assert not [d for d in run["diagnostics"] if d["kind"] == "llvm"]


def test_a_failing_pass_keeps_its_ir_and_names_the_pass(runs):
    run = runs[NVIDIA_38.name]
    kernels = [c["kernel"] for c in run["compilations"]]
    assert not HELPERS & set(kernels)  # the diagnostics' call stacks name helpers: none is a compilation
    clc = _by_target(run)[("work_stealing_kernel", "cuda:90")]
    assert clc["status"] == "failed"
    assert clc["failed_pass"] == "ConvertTritonGPUToLLVM"
    assert clc["status_reason"] == "CLC operations require SM100+ (Blackwell)"
    # The "After ConvertTritonGPUToLLVM Failed" dump (its module in generic form) is a snapshot.
    assert clc["snapshots"]["mlir"] == 20
    assert run["damaged"] == 0
    owned = [d["message"] for d in run["compilation_diagnostics"] if d["kernel"] == "work_stealing_kernel"]
    assert owned[0] == "CLC operations require SM100+ (Blackwell)"
    assert "Failures have been detected while processing an MLIR pass pipeline" in owned
    assert "RuntimeError: PassManager::run failed" in owned  # the Python error that ended it
    assert run["diagnostics"] == []


def test_failed_ir_is_the_last_snapshot_and_pages_show_the_failure(tmp_path):
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        log = _unzipped(NVIDIA_38, tmp_path)
        files = [("file", (path.name, path.read_bytes(), "application/octet-stream")) for path in (log, KERNELS)]
        response = client.post("/runs", files=files, data={"csrf_token": form_token(client)}, follow_redirects=False)
        assert response.status_code == 201, response.text
        run = response.json()
        clc = _by_target(run)[("work_stealing_kernel", "cuda:90")]
        detail = client.get(clc["url"] + ".json").json()
        last = detail["snapshots"][-1]
        assert (last["pass"], last["when"], last["failed"]) == ("ConvertTritonGPUToLLVM", "after", True)
        assert not any(s["failed"] for s in detail["snapshots"][:-1])
        assert detail["failed_pass"] == "ConvertTritonGPUToLLVM"
        body = client.get(last["raw_url"]).text
        assert body.count('"builtin.module"() ({') == 1 and '"ttng.clc_try_cancel"' in body
        page = client.get(clc["url"]).text
        assert "failed pass" in page and "ConvertTritonGPUToLLVM" in page
        assert "CLC operations require SM100+ (Blackwell)" in page
        run_page = client.get(run["url"]).text
        text = html.unescape(re.sub(r"<[^>]+>", " ", run_page))
        assert "pass ConvertTritonGPUToLLVM failed" in " ".join(text.split())
        assert "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.ld" in text
        # The quoted kernel name is shown unquoted, and escaped like every name.
        assert "add kernel &lt;em&gt;&amp;" in run_page and "<em>&" not in run_page
        assert 'add kernel <em>&"x"' in text


def test_amd_failures_are_one_attempt_per_kernel_never_per_helper(runs):
    run = runs[AMD_38.name]
    got = [(c["kernel"], c["target"], c["status"]) for c in run["compilations"]]
    # (The failed ones have no IR to read a target from: they take the one every compile of the log had.)
    assert got == [
        ("vector_add_kernel", "hip:gfx942", "ok"),
        ("copy_2d_kernel", "hip:gfx942", "failed"),  # layout errors in the kernel and in its helper
        ("tma_copy_kernel", "hip:gfx942", "failed"),  # 'HIPOptions' object has no attribute 'enable_iisan'
        ("tmem_round_trip_kernel", "hip:gfx942", "failed"),
    ]
    copy, tma = run["compilations"][1], run["compilations"][2]
    assert copy["status_reason"].startswith("Result 0 has an invalid layout")
    assert tma["status_reason"] == "'HIPOptions' object has no attribute 'enable_iisan'"
    by_kernel: dict[str, list[str]] = {}
    for diag in run["compilation_diagnostics"]:
        by_kernel.setdefault(diag["kernel"], []).append(diag["kind"])
    # copy_2d_kernel: its three MLIR errors (one inside tile_mask_offsets) and the traceback that ended it.
    assert by_kernel["copy_2d_kernel"] == ["mlir", "mlir", "mlir", "traceback"]
    assert run["diagnostics"] == []


def test_amd_failures_without_the_source_name_only_what_the_traceback_names(runs):
    run = runs["amd without source"]
    got = [(c["kernel"], c["status"]) for c in run["compilations"]]
    # The CompilationError's excerpt names tma_copy_kernel; nothing else names a kernel.
    assert got == [("vector_add_kernel", "ok"), ("tma_copy_kernel", "failed")]
    assert {d["kind"] for d in run["diagnostics"]} == {"mlir", "traceback"}


def test_triton39_failures(runs):
    run = runs[NVIDIA_39.name]
    got = [(c["kernel"], c["target"], c["status"], c["failed_pass"]) for c in run["compilations"]]
    assert got == [
        ("tmem_round_trip_kernel", "cuda:90", "failed", None),  # 3.9 refuses tensor memory on sm90 up front
        ("work_stealing_kernel", "cuda:90", "failed", "ConvertTritonGPUToLLVM"),
        ("tma_copy_kernel", "cuda:90", "failed", None),
    ]
    assert run["compilations"][0]["status_reason"] == "'ttng.tmem_alloc' op requires tcgen05 support"
    assert not HELPERS & {c["kernel"] for c in run["compilations"]}


@pytest.mark.parametrize("fixture", [NVIDIA_38, AMD_38, NVIDIA_39], ids=lambda path: path.name)
def test_every_kernel_is_one_compilation_and_every_banner_a_snapshot(runs, fixture):
    run = runs[fixture.name]
    banners = _banners(fixture)
    kept = {kind: sum(c["snapshots"][kind] for c in run["compilations"]) for kind in banners}
    assert kept == banners
    assert run["damaged"] == 0
    kernels = [c["kernel"] for c in run["compilations"]]
    assert len(kernels) == len(set(kernels)) or fixture is NVIDIA_38  # one target per kernel here
    assert all(c["status"] == "ok" or c["status_reason"] for c in run["compilations"])
    assert not HELPERS & set(kernels)


def test_anonymous_namespace_banner_gives_a_readable_pass_name(runs):
    with gzip.open(NVIDIA_38, "rt", encoding="utf-8") as log:
        banner = next(line.rstrip("\n") for line in log if "(anonymous namespace)::" in line)
    header = parse_header(banner)
    assert header is not None
    assert (header.pass_name, header.pass_arg, header.scope) == (
        "VerifyWarpSpecializationPartitions", None, "builtin.module",
    )
    assert parse_header(banner.replace("(anonymous namespace)::", "mlir::triton::")).pass_name == (
        "VerifyWarpSpecializationPartitions"
    )


def test_quoted_kernel_symbol_is_unquoted(runs):
    run = runs[NVIDIA_38.name]
    quoted = run["compilations"][-1]
    assert quoted["kernel"] == 'add kernel <em>&"x"'  # printed as @"add kernel <em>&\22x\22"
    assert quoted["snapshots"] == {"mlir": 61, "internal": 2, "llvm": 0}
    assert quoted["status_reason"] == "LLVM ERROR: Symbol name with unsupported characters"


def test_the_reproducer_before_a_failed_dump_is_a_whole_module():
    """MLIR's reproducer is found in the gap text before the failed dump, and passes the same checks
    as a dump: it can stand in for a failed dump that printed no module."""
    with gzip.open(NVIDIA_38, "rb") as log:
        records = list(scan_log(log))
    failed = next(i for i, r in enumerate(records) if isinstance(r, Dump) and r.header.failed)
    gap = [line for r in records[:failed] if isinstance(r, GapBlock) for line in r.lines]
    reproducer = find_reproducer(gap)
    assert reproducer is not None
    assert reproducer.pipeline.startswith("builtin.module(") and "convert-triton-gpu-to-llvm" in reproducer.pipeline
    assert reproducer.text.splitlines()[-1] == "#-}"
    assert "ttng.clc_try_cancel" in reproducer.text
    assert body_damage(reproducer.text.encode(), "mlir") is None
    assert reproducer.last_line < records[failed].line


def test_a_failed_dump_without_a_module_takes_the_reproducer(tmp_path):
    """When the "IR Dump After X Failed" body holds only aliases and #loc lines (as reported for
    Triton 3.8), the reproducer's module printed before it is the IR at the failure. The real failed
    dump is cut down to those lines here, the rest of the log as captured."""
    from app.store.db import Database

    lines = gzip.decompress(NVIDIA_38.read_bytes()).decode().split("\n")
    banner = next(i for i, line in enumerate(lines) if " Failed: " in line and line.startswith("// -----// "))
    end = lines.index("", banner)
    kept = [line for line in lines[banner + 1 : end] if line.startswith("#")]
    assert len(kept) < end - banner - 1  # the generic-form module is gone
    log = tmp_path / "failed_dump_without_module.log"
    log.write_text("\n".join(lines[: banner + 1] + kept + lines[end:]))
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [log, KERNELS])
        clc = _by_target(run)[("work_stealing_kernel", "cuda:90")]
        with database.session() as session:
            from sqlalchemy import select

            from app import render
            from app.store.models import Compilation, Snapshot

            last = session.scalars(
                select(Snapshot).join(Compilation).where(Compilation.run_id == run["run"], Compilation.ordinal == clc["id"])
                .order_by(Snapshot.index.desc())
            ).first()
            body = render.blob_reader.text(session, last.blob)
    finally:
        database.dispose()
    assert (last.pass_name, last.failed) == ("ConvertTritonGPUToLLVM", True)
    assert body.startswith("#shared = ") and "ttng.clc_try_cancel" in body and body.endswith("#-}")
    assert (clc["status"], clc["failed_pass"], clc["snapshots"]["mlir"]) == ("failed", "ConvertTritonGPUToLLVM", 20)
    assert run["damaged"] == 0
    [note] = [w for w in run["warnings"] if "reproducer" in w["message"]]
    assert "holds no module" in note["message"]


def test_llvm_error_right_under_an_llvm_dump_ends_that_dump(tmp_path):
    """With LLVM_IR_ENABLE_DUMP=1 the fatal error follows the last LLVM dump's closing brace directly:
    the dump stays whole, and the error is the compilation's."""
    from app.store.db import Database

    fixture = FIXTURES / "triton38_llvm_error_with_llvm_dumps.log.gz"
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [_unzipped(fixture, tmp_path)])
    finally:
        database.dispose()
    [compilation] = run["compilations"]
    assert compilation["snapshots"] == {"mlir": 30, "internal": 0, "llvm": 157}
    assert run["damaged"] == 0
    assert compilation["status"] == "failed"
    assert compilation["status_reason"] == "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.ld"
    with gzip.open(fixture, "rt", encoding="utf-8") as log:
        banners = sum(1 for line in log if "IR Dump " in line and line.startswith(("// -----// ", "; *** ", "*** ")))
    assert banners == 187


def test_a_failure_inside_a_nested_pipeline_is_one_failed_compilation(tmp_path):
    """A pass fails inside one that nests a pipeline: "After Inner Failed", then "After Outer Failed".
    One failed compilation, named by the inner pass, both failed dumps its snapshots (fixture derived
    from a real Triton 3.8 compile: tests/fixtures/make_nested_failure.py)."""
    import lzma

    from app.store.db import Database

    log = tmp_path / "nested_failure.log"
    log.write_bytes(lzma.decompress((FIXTURES / "nested_failure_derived.log.xz").read_bytes()))
    banners = log.read_text().count("\n// -----// IR Dump ") + 1
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [log])
    finally:
        database.dispose()
    assert run["damaged"] == 0
    (compilation,) = run["compilations"]
    assert (compilation["kernel"], compilation["status"]) == ("matmul_kernel", "failed")
    assert compilation["failed_pass"] == "TritonGPUPartitionScheduling"
    assert compilation["snapshots"]["mlir"] + compilation["snapshots"]["internal"] == banners == 35


def test_a_failed_compile_takes_its_logs_target_in_an_upload_of_several_captures(tmp_path):
    """The demo bundles captures for other GPUs beside gfx1250_fail's: the failed compile (made from
    its diagnostic, no IR) still takes the target of its own log's compilations, as it does when that
    capture is uploaded alone; the reference is the capture's meta.txt (what the program ran for)."""
    import tarfile

    from sqlalchemy import select

    from app.store.db import Database
    from app.store.models import Compilation

    demo = Path(__file__).resolve().parents[1] / "app" / "demo" / "demo.tar.xz"
    with tarfile.open(demo) as bundle:
        meta = bundle.extractfile("amd_gfx1250_verifier_error/meta.txt").read().decode()
    wanted = re.search(r"target=(\S+)", meta).group(1)
    database = Database(fresh_db_url(tmp_path))
    try:
        ingest_paths(database, [demo])
        with database.session() as session:
            rows = list(session.scalars(select(Compilation)))
            failed = [row for row in rows if row.status == "failed" and row.origin == "diagnostic"]
            assert failed and {row.target for row in failed} == {wanted}
            assert {row.target for row in rows} >= {"cuda:90", "hip:gfx942", wanted}  # the others keep theirs
    finally:
        database.dispose()
