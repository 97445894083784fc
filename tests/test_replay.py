"""Replay (app/replay): passes re-run on their dumps with Triton itself, against the dumps it logged.

The reference is Triton: a pass re-run on the dump before it must give the stored dump after it; a
dump altered by hand must come out `differs`; a failed compile's failing pass must fail again with the
error the log shows. These need an interpreter with the capture's Triton: this one (the test extra's
triton), or one IRLENS_REPLAY_PYTHONS names (`3.1=/venvs/t31/bin/python`); without one they skip.
The pure parts (pairing banners with bindings, the reproducer text) run everywhere.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.cli import main as cli_main
from app.replay.plan import Dump, pass_text, plan_steps, split_pipeline
from app.replay.remote import server_source
from app.replay.replay import replay, store_source
from app.replay.reproducers import PassSpec, pipeline, reproducer_mlir
from app.replay.runner import Limits, ReplayFailed, Worker, installed_triton, parse_pythons
from app.settings import Settings
from app.store.db import Database
from app.store.models import Compilation
from app.web.app import create_app
from parsers.logs.reproducer import find_reproducer
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths

ADD_39 = FIXTURES / "sm90_add_kernel_dump.log.gz"  # Triton 3.9, cuda:90, 76 MLIR dumps
FAILURES_39 = FIXTURES / "triton39_failures_nvidia.log.gz"  # ConvertTritonGPUToLLVM fails (CLC on sm90)
OLD_31 = FIXTURES / "old_header_sm90_triton31.log.gz"  # Triton 3.1 banners: `Inliner (inline)`


def python_with(version: str) -> str:
    """An interpreter whose triton is `version` (a prefix: "3.9"), or skip."""
    here = installed_triton()
    if here and here.startswith(version):
        return sys.executable
    for named, path in parse_pythons(os.environ.get("IRLENS_REPLAY_PYTHONS")).items():
        if named.startswith(version) and Path(path).exists():
            return path
    pytest.skip(f"no interpreter with triton {version} (install the test extra, or set IRLENS_REPLAY_PYTHONS)")


def _plain(path: Path, tmp_path: Path) -> Path:
    plain = tmp_path / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    return plain


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The fixtures ingested: name -> (database, run id)."""
    tmp = tmp_path_factory.mktemp("replay")
    database = Database(fresh_db_url(tmp))
    runs = {}
    for name, path in (("add", ADD_39), ("failures", FAILURES_39), ("old", OLD_31)):
        runs[name] = ingest_paths(database, [_plain(path, tmp)])["run"]
    yield database, runs, tmp
    database.dispose()


def _compilation(session, run_id: str, ordinal: int = 1) -> Compilation:
    return session.scalar(select(Compilation).where(Compilation.run_id == run_id, Compilation.ordinal == ordinal))


# ------------------------------------------------------------------------------------------- pure


def _dump(index, arg, scope="builtin.module", options=None, when="before", failed=False, kind="mlir"):
    return Dump(index, kind, when, arg.title(), arg, options, scope, failed)


def test_banners_pair_with_the_backends_passes_and_nested_dumps_belong_to_the_pass_around_them():
    calls = [{"pipeline": "any(inline{default-pipeline=canonicalize })"},
             {"pipeline": "any(canonicalize{a=1    b=2})"},
             {"pipeline": "any(llvm.func(canonicalize-llvm-ir))"},
             {"pipeline": "any(cse)"}]
    dumps = [_dump(0, "inline", options="{default-pipeline=canonicalize }"),
             _dump(1, "canonicalize", "tt.func @helper", "{a=1 b=2}"),  # the inliner's own, per function
             _dump(2, "canonicalize", options="{a=1 b=2}"),
             _dump(3, "canonicalize-llvm-ir", "llvm.func @kernel"),
             _dump(4, "canonicalize-llvm-ir", "llvm.func @other"),  # the same pass, its second function
             _dump(5, "internal", kind="internal", when="after"),
             _dump(6, "cse")]
    steps = {step.dump.index: step for step in plan_steps(dumps, calls)}
    assert [(i, steps[i].call, steps[i].after) for i in (0, 2, 3, 6)] == [(0, 0, 2), (2, 1, 3), (3, 2, 6), (6, 3, None)]
    assert steps[1].call is None and steps[1].nested_in == 0 and "ran inside" in steps[1].reason
    assert steps[4].nested_in == 3 and "another function of" in steps[4].reason
    assert "no dump after" in steps[6].reason
    assert split_pipeline("any(a,b)") is None  # a binding adding two passes is not one pass


def test_passes_that_printed_no_dump_run_with_the_pass_before_them():
    """MLIR_ENABLE_DUMP=kernel prints no dump for a function-anchored pass (the corpus's sm90_filter):
    the backend still ran it, before the next dump."""
    calls = [{"pipeline": "any(initialize-ws)"}, {"pipeline": "any(llvm.func(canonicalize-llvm-ir))"},
             {"pipeline": "any(cse)"}, {"pipeline": "any(symbol-dce)"}]
    steps = plan_steps([_dump(0, "initialize-ws"), _dump(1, "cse"), _dump(2, "symbol-dce")], calls)
    assert [(s.call, s.after, s.undumped) for s in steps] == [(0, 1, [1]), (2, 2, []), (3, None, [])]


def test_a_failed_dump_is_what_the_failing_pass_is_compared_with():
    calls = [{"pipeline": "any(cse)"}, {"pipeline": "any(convert-triton-gpu-to-llvm{x=1})"}]
    dumps = [_dump(0, "cse"), _dump(1, "convert-triton-gpu-to-llvm", options="{x=1}"),
             _dump(2, "convert-triton-gpu-to-llvm", when="after", failed=True)]
    steps = plan_steps(dumps, calls)
    assert [(s.dump.index, s.after) for s in steps] == [(0, 1), (1, 2)]


def test_reproducer_mlir_nests_the_pipeline_under_its_anchor_and_says_when_options_are_missing():
    spec = PassSpec("r-1", 3, "CanonicalizerPass", "canonicalize", "{max-iterations=10   top-down=true}",
                    "tt.func @kernel", "3.9.0", "cuda:90")
    assert pipeline(spec) == "builtin.module(tt.func(canonicalize{max-iterations=10   top-down=true}))"
    text = reproducer_mlir(spec, "module {\n}\n")
    assert 'pipeline: "builtin.module(tt.func(canonicalize{max-iterations=10   top-down=true}))"' in text
    assert "disable_threading: true" in text and "verify_each: true" in text and text.rstrip().endswith("#-}")
    assert "argument only" not in text
    old = PassSpec("r-1", 9, "ConvertTritonToTritonGPU", "convert-triton-to-tritongpu", None, "builtin.module",
                   "3.1.0", "cuda:90", {"num_warps": 8, "num_stages": 3})
    text = reproducer_mlir(old, "module {\n}\n")
    assert "argument only" in text and "num_warps=8 num_stages=3 target=cuda:90" in text
    assert 'pipeline: "builtin.module(convert-triton-to-tritongpu)"' in text


# ----------------------------------------------------------------------------- with Triton itself


def test_every_pass_of_a_triton_39_compile_replays_to_the_logged_next_dump(stored):
    python = python_with("3.9")
    database, runs, _ = stored
    with database.session() as session:
        report = replay(store_source(session, _compilation(session, runs["add"])), python)
    summary = report["summary"]
    assert report["triton"]["replayed_with"].startswith("3.9") and not report.get("error")
    assert summary["error"] == 0 and summary["differs"] == 0
    assert summary["changed"] >= 10 and summary["changed_same"] >= 0.9 * summary["changed"]
    # every pass the backend adds was run: only nested dumps and the last one are not replayable
    for entry in report["passes"]:
        if entry["status"] == "not-replayable":
            assert "ran inside" in entry["reason"] or "no dump after" in entry["reason"], entry
        else:
            assert entry["binding"].split(".")[0] in ("passes", "nvidia") and entry["pipeline"].startswith("any(")
    coalesce = next(e for e in report["passes"] if e["pass"] == "TritonGPUCoalesce")
    assert coalesce["changed"] and coalesce["status"] == "same"


def test_a_tampered_dump_comes_out_differs_with_the_altered_line(stored):
    python = python_with("3.9")
    database, runs, _ = stored
    with database.session() as session:
        source = store_source(session, _compilation(session, runs["add"]))
        coalesce = next(d for d in source.dumps if d.pass_name == "TritonGPUCoalesce")
        after = coalesce.index + 1
        original = source.text(after)
        line = next(x for x in original.splitlines() if "arith.addf" in x)  # the kernel's one add
        tampered_line = line.replace("arith.addf", "arith.subf", 1)
        text = source.text
        source.text = lambda index: original.replace(line, tampered_line) if index == after else text(index)
        report = replay(source, python, only=coalesce.index)
    entry = report["passes"][0]
    assert entry["status"] == "differs" and entry["after"] == after
    assert f"- {tampered_line}" in entry["diff"]


def test_a_failed_compiles_failing_pass_fails_again_with_the_logged_error(stored):
    python = python_with("3.9")
    database, runs, _ = stored
    with database.session() as session:
        compilation = _compilation(session, runs["failures"])
        assert compilation.status == "failed" and compilation.failed_pass == "ConvertTritonGPUToLLVM"
        report = replay(store_source(session, compilation), python)
    failing = [e for e in report["passes"] if e["status"] == "error"]
    assert len(failing) == 1 and failing[0]["pass"] == "ConvertTritonGPUToLLVM"
    assert failing[0]["logged_error"] == "CLC operations require SM100+ (Blackwell)"
    assert failing[0]["reason"] == failing[0]["logged_error"] and failing[0]["reproduced"] is True
    assert report["summary"]["differs"] == 0


def test_the_recorded_pass_list_is_the_pipeline_mlir_itself_logged_for_the_failing_stage(stored):
    """MLIR printed its own reproducer when the stage failed (parsers/logs/reproducer.py reads it): the
    passes the dry run recorded, as their bindings print them, are that pipeline's passes in order."""
    python = python_with("3.9")
    database, runs, _ = stored
    lines = list(enumerate(gzip.decompress(FAILURES_39.read_bytes()).decode().splitlines(), 1))
    inner = find_reproducer(lines).pipeline.removeprefix("builtin.module(").removesuffix(")")
    logged = [pass_text(part.strip(), None) for part in _top_level(inner)]
    with database.session() as session:
        report = replay(store_source(session, _compilation(session, runs["failures"])), python)
    recorded = [split_pipeline(e["pipeline"])[1] for e in report["passes"] if e["pipeline"]]
    # the failing stage's passes up to the failing one: the end of the recorded list, the start of MLIR's
    starts = [i for i in range(len(recorded)) if recorded[i:] == logged[: len(recorded) - i]]
    assert starts and len(recorded) - starts[0] >= 10, (recorded, logged)
    assert recorded[-1] == "convert-triton-gpu-to-llvm{compute-capability=90 ptx-version=94}" in logged


def _top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "({"
        depth -= char in ")}"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def test_the_web_panel_and_the_failure_reproducer(stored):
    python = python_with("3.9")
    database, runs, tmp = stored
    settings = Settings(db_url=database.url, data_dir=tmp, load_demo=False, replay_pythons=f"3=={python}".replace("==", "="))
    with TestClient(create_app(settings)) as client:
        page = client.get(f"/runs/{runs['failures']}/c/1.json").json()
        repro = page["reproduce_failure"]
        assert repro["pass"] == "ConvertTritonGPUToLLVM" and repro["index"] is not None
        assert "Reproduce the failure" in client.get(f"/runs/{runs['failures']}/c/1").text
        mlir = client.get(repro["reproducer_mlir_url"])
        assert mlir.status_code == 200 and "attachment" in mlir.headers["content-disposition"]
        assert 'pipeline: "builtin.module(convert-triton-gpu-to-llvm{compute-capability=90 ptx-version=94})"' in mlir.text
        script = tmp / "reproducer.py"
        script.write_text(client.get(repro["reproducer_py_url"]).text)
        panel = client.get(repro["replay_url"] + ".json").json()
        assert panel["status"] == "error" and panel["reproduced"] is True
        # the add kernel's coalesce pass, as the diff page's panel shows it
        detail = client.get(f"/runs/{runs['add']}/c/1.json").json()
        coalesce = next(s for s in detail["snapshots"] if s["pass"] == "TritonGPUCoalesce")
        diff = client.get(f"/diff/{coalesce['id']}..{runs['add']}-1-{coalesce['index'] + 1}")
        assert "Re-run this pass" in diff.text
        fragment = client.get(f"{coalesce['url']}/replay", headers={"hx-request": "true"})
        assert 'data-status="same"' in fragment.text and "<html" not in fragment.text
    # reproducer.mlir, resource block and all, parses with the wheel's own parser
    (tmp / "reproducer.mlir").write_text(mlir.text)
    parse = ("from triton._C.libtriton import ir; from triton.backends.compiler import GPUTarget;"
             "from triton.compiler.compiler import make_backend; c = ir.context(); ir.load_dialects(c);"
             "make_backend(GPUTarget('cuda', 90, 32)).load_dialects(c);"
             "print(ir.parse_mlir_module('reproducer.mlir', c).get_entry_func_name())")
    parsed = subprocess.run([python, "-c", parse], check=False, capture_output=True, text=True, timeout=300, cwd=tmp)
    assert parsed.returncode == 0 and parsed.stdout.strip() == "work_stealing_kernel", parsed.stderr[-2000:]
    # the script, run by the capture's Triton, fails as the compile did
    done = subprocess.run([python, str(script)], check=False, capture_output=True, text=True, timeout=300, cwd=tmp)
    assert done.returncode != 0 and "CLC operations require SM100+ (Blackwell)" in done.stderr


def test_reproducer_py_reruns_the_pass_and_diffs_against_the_next_dump(stored):
    python = python_with("3.9")
    database, runs, tmp = stored
    with TestClient(create_app(Settings(db_url=database.url, data_dir=tmp, load_demo=False))) as client:
        detail = client.get(f"/runs/{runs['add']}/c/1.json").json()
        snapshot = next(s for s in detail["snapshots"] if s["pass"] == "TritonNvidiaGPUMMALoweringPass")
        (tmp / "repro.py").write_text(client.get(snapshot["url"] + "/reproducer.py").text)
        (tmp / "same.mlir").write_text(client.get(snapshot["raw_url"]).text)  # the pass leaves add_kernel as is
    done = subprocess.run([python, "repro.py", "same.mlir"], check=False, capture_output=True, text=True, timeout=300, cwd=tmp)
    assert done.returncode == 0 and "same text as the stored dump" in done.stdout, done.stderr[-2000:]


def test_the_cli_prints_the_json_report(stored, capsys):
    python = python_with("3.9")
    database, runs, _ = stored
    code = cli_main(["replay", "--db", database.url, "--python", python, "--json", "--pass", "9", f"{runs['add']}-1"])
    out = capsys.readouterr().out
    import json

    report = json.loads(out)
    assert code == 0 and set(report) >= {"compilation", "triton", "passes", "summary"}
    assert [p["index"] for p in report["passes"]] == [9]
    assert set(report["passes"][0]) >= {"index", "after", "pass", "pipeline", "changed", "status", "reason", "diff"}
    assert cli_main(["replay", "--db", database.url, "--python", python, f"/runs/{runs['add']}/c/1"]) == 0
    assert "total: " in capsys.readouterr().out


def test_a_compilation_read_from_a_servers_json_replays_as_the_stored_one(stored):
    """`irlens replay --server`: the compilation page's .json twin and the /raw texts are all it needs."""
    python = python_with("3.9")
    database, runs, tmp = stored
    with TestClient(create_app(Settings(db_url=database.url, data_dir=tmp, load_demo=False))) as client:
        served = replay(server_source(client, "", f"/runs/{runs['add']}/c/1"), python)
    with database.session() as session:
        local = replay(store_source(session, _compilation(session, runs["add"])), python)
    assert served["summary"] == local["summary"] and served["compilation"] == local["compilation"]
    assert [(p["index"], p["status"]) for p in served["passes"]] == [(p["index"], p["status"]) for p in local["passes"]]


def test_sm90_mix_replays_without_its_cache_metadata(tmp_path):
    """The corpus's sm90_mix (six kernels, 8 warps for most) with the cache metadata dropped, as for a
    log uploaded alone: the backend's options come from the banners (`num-warps=8`), and every pass
    that changed the IR replays to its logged result (bench.replay covers it with its metadata)."""
    python = python_with("3.9")
    database = Database(fresh_db_url(tmp_path))
    run_id = ingest_paths(database, [corpus_archive("sm90_mix")])["run"]
    with database.session() as session:
        compilations = session.scalars(select(Compilation).where(Compilation.run_id == run_id)).all()
        assert len(compilations) == 6
        for compilation in compilations:
            source = store_source(session, compilation)
            source.metadata, source.options = None, {}
            summary = replay(source, python)["summary"]
            assert summary["error"] == 0 and summary["differs"] == 0, (compilation.kernel, summary)
            assert summary["changed_same"] == summary["changed"] >= 10, (compilation.kernel, summary)
    database.dispose()


def test_triton_31_banners_pair_by_argument_and_replay(stored):
    python = python_with("3.1")
    database, runs, _ = stored
    with database.session() as session:
        report = replay(store_source(session, _compilation(session, runs["old"])), python)
    summary = report["summary"]
    assert summary["error"] == 0 and summary["differs"] == 0 and summary["changed_same"] == summary["changed"] > 0


def test_hostile_ir_and_limits_end_in_errors_not_in_the_caller(stored):
    python = python_with("3.9")
    database, runs, _ = stored
    with database.session() as session:
        source = store_source(session, _compilation(session, runs["add"]))
        first = source.dumps[0].index
        source.text = lambda index: "module { this is not IR" if index == first else ""
        report = replay(source, python, only=first)
    assert report["passes"][0]["status"] == "error"
    with pytest.raises(ReplayFailed):  # an address space too small to import Triton: the start fails, reported
        Worker(python, Limits(seconds=30, memory_mb=64)).start()
    slow = Worker(python, Limits(seconds=0.05))  # past its time: killed, and said so
    with pytest.raises(ReplayFailed, match="time limit"):
        slow.start()
    assert slow.process.poll() is not None
