"""Every corpus archive ingests as shipped and gives exactly the compilations in expected.json."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CORPUS


def _expected() -> dict:
    path = CORPUS / "expected.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize("name", sorted(_expected()) or ["corpus-absent"])
def test_corpus_archive_gives_expected_compilations(corpus_runs, name):
    expected = _expected()[name]["compilations"]
    run = corpus_runs[name]
    from_dumps = [c for c in run["compilations"] if c["origin"] == "log"]
    got = [
        {"kernel": c["kernel"], "mlir": c["snapshots"]["mlir"], "internal": c["snapshots"]["internal"],
         "llvm": c["snapshots"]["llvm"]}
        for c in from_dumps
    ]
    assert got == expected
    assert run["damaged"] == 0


def test_cache_entries_link_to_their_compilations(corpus_runs):
    run = corpus_runs["sm90_mix"]
    by_kernel = {c["kernel"]: c for c in run["compilations"]}
    # Six kernels dumped and six cached: every dump compilation matched its cached .ttgir.
    assert len(run["compilations"]) == 6
    for compilation in run["compilations"]:
        assert compilation["cache_match"] == "ttgir"
        assert compilation["target"] == "cuda:90"
        assert compilation["triton_version"] == "3.9.0"
        assert {"ttir", "ttgir", "llir", "ptx", "json"} <= set(compilation["artifacts"])
    assert by_kernel["matmul_kernel"]["status"] == "ok"


def test_cache_only_compilations_follow_log_ones(corpus_runs):
    run = corpus_runs["sm90_filter"]
    kernels = [(c["kernel"], c["origin"]) for c in run["compilations"]]
    assert kernels[0] == ("matmul_kernel", "log")
    assert sorted(kernels[1:]) == [("add_kernel", "cache"), ("softmax_kernel", "cache")]
    nodump = corpus_runs["sm90_nodump"]
    assert sorted(c["kernel"] for c in nodump["compilations"]) == ["add_kernel", "attention_fwd_kernel", "matmul_kernel"]
    assert all(c["origin"] == "cache" and c["snapshots"]["mlir"] == 0 for c in nodump["compilations"])


def test_amd_targets_and_versions(corpus_runs):
    for name, target in (("gfx942_mix", "hip:gfx942"), ("gfx1250_tdm", "hip:gfx1250")):
        assert {c["target"] for c in corpus_runs[name]["compilations"]} == {target}
    old = corpus_runs["old_3.1_sm90"]
    assert {c["target"] for c in old["compilations"]} == {"cuda:90"}


def test_verifier_error_becomes_a_failed_compilation(corpus_runs):
    run = corpus_runs["gfx1250_fail"]
    statuses = [(c["kernel"], c["status"]) for c in run["compilations"] if c["origin"] != "cache"]
    # The failing kernel sits between the two good compilations, in log order.
    assert statuses[0] == ("gluon_tdm_load_store_kernel", "ok")
    # The error's line (kernels.py:236) lies in gluon_tdm_load_store_kernel, compiled again with a bad padding.
    assert statuses[1] == ("gluon_tdm_load_store_kernel", "failed")
    assert statuses[2] == ("add_kernel", "ok")
    failed = run["compilations"][1]
    assert "TDM store padding" in failed["status_reason"]


def test_timing_reports_give_per_pass_times(corpus_runs, session_db):
    from sqlalchemy import select

    from app.store.models import Compilation, Timing

    run = corpus_runs["sm90_timing"]
    (compilation,) = run["compilations"]
    assert compilation["compile_seconds"] and compilation["compile_seconds"] > 0
    with session_db.session() as session:
        pk = session.scalar(select(Compilation.pk).where(Compilation.run_id == run["run"]))
        names = session.scalars(select(Timing.name).where(Timing.compilation_pk == pk)).all()
    assert "InlinerPass" in names and "ConvertTritonToTritonGPU" in names


def test_kernel_dump_folders_join_their_cache_entries(corpus_runs):
    run = corpus_runs["sm90_kerneldump"]
    assert sorted(c["kernel"] for c in run["compilations"]) == ["add_kernel", "matmul_kernel"]
    for compilation in run["compilations"]:
        assert "sass" in compilation["artifacts"]  # only TRITON_KERNEL_DUMP writes .sass


def test_launcher_libraries_in_the_cache_are_not_kernels(corpus_runs):
    run = corpus_runs["gpu_inductor"]
    # 63 compilations, each matched to its cache folder; cuda_utils*.so's folder is not a kernel.
    assert len(run["compilations"]) == 63
    assert all(c["cache_match"] == "ttgir" for c in run["compilations"])
