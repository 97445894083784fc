"""Ingest behaviour the contract promises: round trips, deduplication, damage, bad input, the CLI."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import pytest
from sqlalchemy import func, select

from app.ingest.pipeline import Ingest, IngestError
from app.store.blobs import BlobReader
from app.store.models import Blob, Compilation, InputRecord, Problem, Snapshot
from tests.conftest import FIXTURES, REPO, corpus_archive, ingest_paths

LOG = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes())
BANNERS = [m.start() for m in re.finditer(rb"^// -----// ", LOG, re.MULTILINE)]


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def stored_bytes(db) -> int:
    with db.session() as session:
        return session.scalar(select(func.coalesce(func.sum(func.length(Blob.data)), 0)))


def test_every_snapshot_round_trips_byte_for_byte(db, tmp_path):
    run = ingest_paths(db, [write(tmp_path, "dump.log", LOG)])
    assert len(run["compilations"]) == 1
    reader = BlobReader()
    with db.session() as session:
        snapshots = session.scalars(
            select(Snapshot).join(Compilation).where(Compilation.run_id == run["run"]).order_by(Snapshot.index)
        ).all()
        assert len(snapshots) == len(BANNERS) == 78
        for snapshot, start, end in zip(snapshots, BANNERS, BANNERS[1:] + [len(LOG)]):
            original = LOG[start:end].partition(b"\n")[2]
            assert reader.get(session, snapshot.blob) == original.rstrip(b"\n")
            assert snapshot.header == LOG[start:end].partition(b"\n")[0].decode()


def test_ingesting_the_same_bundle_twice_adds_almost_no_storage(db):
    archive = corpus_archive("sm90_mix")
    ingest_paths(db, [archive])
    first = stored_bytes(db)
    ingest_paths(db, [archive])
    second = stored_bytes(db)
    # The second run adds rows but no blob: every snapshot, artifact and log text is already stored.
    assert second == first
    assert first < archive.stat().st_size * 3  # and the first copy is compact


def test_identical_snapshots_are_stored_once_within_a_run(db, tmp_path):
    run = ingest_paths(db, [write(tmp_path, "dump.log", LOG)])
    with db.session() as session:
        distinct = session.scalar(
            select(func.count(func.distinct(Snapshot.blob))).join(Compilation).where(Compilation.run_id == run["run"])
        )
    # At most one blob per change (a pass can restore an earlier IR), none for unchanged passes.
    assert distinct <= run["compilations"][0]["changed"] < 78


def test_log_cut_off_mid_dump_marks_the_compilation_partial(db, tmp_path):
    cut = BANNERS[50] + 2000
    run = ingest_paths(db, [write(tmp_path, "dump.log", LOG[:cut])])
    (compilation,) = run["compilations"]
    assert compilation["status"] == "partial"
    assert compilation["snapshots"]["mlir"] + compilation["snapshots"]["internal"] == 50
    assert run["damaged"] == 1
    assert any(w["kind"] == "damaged-dump" and "ends inside" in w["message"] for w in run["warnings"])


def test_interleaved_dumps_keep_intact_ones_and_count_damaged(db, tmp_path):
    a_start, a_end = BANNERS[10], BANNERS[11]
    half = LOG.index(b"\n", a_start + (a_end - a_start) // 2) + 1
    mixed = LOG[:half] + LOG[BANNERS[30] : BANNERS[31]] + LOG[a_end:]
    run = ingest_paths(db, [write(tmp_path, "dump.log", mixed)])
    assert run["damaged"] == 1
    (compilation,) = run["compilations"]
    assert sum(compilation["snapshots"].values()) == 78  # 77 intact of its own + the interloper
    with db.session() as session:
        problem = session.scalar(select(Problem).where(Problem.kind == "damaged-dump"))
        assert BlobReader().get(session, problem.blob)  # the damaged text is kept, not dropped


def test_non_utf8_binary_and_empty_files_get_clear_messages_and_the_rest_is_kept(db, tmp_path):
    log = b"\xff\xfe warning: not utf-8\n" + LOG
    paths = [
        write(tmp_path, "dump.log", log),
        write(tmp_path, "junk.bin", bytes(range(256)) * 64),
        write(tmp_path, "empty.log", b""),
    ]
    run = ingest_paths(db, paths)
    assert run["compilations"][0]["snapshots"]["mlir"] == 76
    messages = {(w["path"], w["message"]) for w in run["warnings"]}
    assert ("junk.bin", "not a text log or a Triton file: binary data") in messages
    assert ("empty.log", "empty file") in messages
    assert any("not UTF-8" in message for _, message in messages)
    with db.session() as session:
        roles = dict(session.execute(select(InputRecord.path, InputRecord.role)).all())
    assert roles == {"dump.log": "log", "junk.bin": "binary", "empty.log": "log"}


def test_an_empty_upload_is_refused_with_a_clear_error(db, tmp_path):
    with db.session() as session, pytest.raises(IngestError, match="empty"):
        Ingest(session).ingest([write(tmp_path, "empty.log", b"")])
    with db.session() as session, pytest.raises(IngestError, match="every file in it has zero bytes"):
        Ingest(session).ingest([write(tmp_path, "empty.log", b""), write(tmp_path, "empty.txt", b"")])
    (tmp_path / "folder").mkdir()
    with db.session() as session, pytest.raises(IngestError, match="no files were found"):
        Ingest(session).ingest([tmp_path / "folder"])


def test_a_missing_path_is_named_as_missing(db, tmp_path):
    missing = tmp_path / "nothing-here"
    with db.session() as session, pytest.raises(IngestError) as error:
        Ingest(session).ingest([missing])
    assert str(error.value) == f"nothing in the upload can be ingested: nothing-here: {missing} does not exist"


def test_an_upload_with_nothing_to_ingest_lists_every_reason(db, tmp_path):
    import py_compile

    demo = (REPO / "app" / "demo" / "demo.tar.xz").read_bytes()
    compiled = py_compile.compile(str(FIXTURES / "triton39_src" / "kernels.py"), cfile=str(tmp_path / "kernels.pyc"))
    paths = [
        write(tmp_path, "cut.tar.xz", demo[:2000]),  # a real capture cut short
        tmp_path / "kernels.pyc",
        write(tmp_path, "empty.log", b""),
        tmp_path / "nothing-here",
    ]
    assert compiled == str(paths[1])
    with db.session() as session, pytest.raises(IngestError) as error:
        Ingest(session).ingest(paths)
    message = str(error.value)
    assert message.startswith("nothing in the upload can be ingested: ")
    for reason in (
        "cut.tar.xz: corrupt archive: truncated",
        "kernels.pyc: Not needed by irlens: compiled Python (.pyc)",
        "empty.log: empty file",
        f"nothing-here: {tmp_path / 'nothing-here'} does not exist",
    ):
        assert reason in message
    assert "zero bytes" not in message


def test_text_without_ir_diagnostics_or_timing_is_kept_as_a_log_with_a_note(db, tmp_path):
    """A capture's meta.txt or a program's stdout is expected beside the logs: a note on the file, not a warning."""
    notes = write(tmp_path, "notes.csv", b"kernel,BLOCK_SIZE,ms\nadd_kernel,1024,0.012\n")
    warning_log = FIXTURES / "python_warning_inductor.txt"  # a real log holding one Python warning only
    run = ingest_paths(db, [notes, warning_log])  # nothing else in the upload: still a run
    assert run["compilations"] == [] and run["diagnostics"] == []
    assert run["warnings"] == []
    noted = {(f["path"], f["role"], f["note"]) for f in run["logs"]}
    assert noted == {
        ("notes.csv", "log", "no Triton IR, diagnostics or timing report: kept as log lines"),
        (warning_log.name, "log", "no Triton IR, diagnostics or timing report: kept as log lines"),
    }
    reader = BlobReader()
    with db.session() as session:
        kept = dict(session.execute(select(InputRecord.path, InputRecord.log_blob)).all())
        assert reader.get(session, kept["notes.csv"]) == notes.read_bytes()  # nothing lost
        assert reader.get(session, kept[warning_log.name]) == warning_log.read_bytes()
    # A log with IR, a diagnostic or a timing report gets no such warning.
    quiet = ingest_paths(db, [write(tmp_path, "dump.log", LOG), FIXTURES / "compilation_error_triton39.txt",
                              FIXTURES / "timing_report_sm90.txt"])
    assert not [f for f in quiet["logs"] if f["note"] and "no Triton IR" in f["note"]]


def test_cli_refuses_a_missing_path_and_ingests_nothing(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'cli.db'}"
    missing = tmp_path / "nothing-here"
    for paths in ([missing], [FIXTURES / "compilation_error_triton39.txt", missing]):
        result = subprocess.run(
            [sys.executable, "-m", "app.cli", "ingest", "--db", db_url, *map(str, paths)],
            capture_output=True, text=True, check=False,
        )
        assert result.returncode != 0
        assert result.stderr == f"irlens: {missing} does not exist; nothing was ingested\n"
        assert result.stdout == ""


def test_a_failed_ingest_leaves_no_partial_run(db, tmp_path, monkeypatch):
    from app.ingest import run_writer as ingest_module
    from app.store.models import Run

    def explode(*args, **kwargs):
        raise RuntimeError("killed mid-ingest")

    monkeypatch.setattr(ingest_module, "link_caches", explode)
    with db.session() as session, pytest.raises(RuntimeError):
        Ingest(session).ingest([write(tmp_path, "dump.log", LOG)])
    with db.session() as session:
        assert session.scalar(select(func.count(Run.id))) == 0
        assert session.scalar(select(func.count(Blob.hash))) == 0


def test_cli_ingest_json_and_serve_get(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'cli.db'}"
    log = write(tmp_path, "dump.log.gz", gzip.compress(LOG))
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "ingest", "--db", db_url, "--json", str(log)],
        capture_output=True, text=True, check=True,
    )
    run = json.loads(result.stdout)
    assert set(run) >= {"run", "url", "compilations", "diagnostics", "damaged", "warnings"}
    assert run["url"] == f"/runs/{run['run']}"
    (compilation,) = run["compilations"]
    assert {k: compilation[k] for k in ("kernel", "target", "status")} == {
        "kernel": "add_kernel", "target": "cuda:90", "status": "ok"}
    assert compilation["snapshots"] == {"mlir": 76, "internal": 2, "llvm": 0}

    env = {"IRLENS_LOAD_DEMO": "false", "PATH": "/usr/bin:/bin"}
    served = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--db", db_url, "--get", f"/runs/{run['run']}.json"],
        capture_output=True, text=True, check=True, env=env,
    )
    assert json.loads(served.stdout)["compilations"] == run["compilations"]
    detail = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--db", db_url, "--get", compilation["url"] + ".json"],
        capture_output=True, text=True, check=True, env=env,
    )
    snapshots = json.loads(detail.stdout)["snapshots"]
    assert len(snapshots) == 78
    assert set(snapshots[0]) >= {"index", "pass", "pass_arg", "kind", "scope", "changed", "id", "url", "raw_url"}
    raw = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--db", db_url, "--get", snapshots[1]["raw_url"]],
        capture_output=True, check=True, env=env,
    ).stdout
    assert raw.rstrip(b"\n") == LOG[BANNERS[1] : BANNERS[2]].partition(b"\n")[2].rstrip(b"\n")


# -- Python-side errors: CompilationErrors and tracebacks mark their compilation failed ---------------
COMPILATION_ERROR = (FIXTURES / "compilation_error_triton39.txt").read_bytes()
POWER_OF_2 = "arange's range must be a power of 2"


def brief(run: dict) -> list[tuple]:
    return [(c["kernel"], c["origin"], c["status"], c["status_reason"], c["target"]) for c in run["compilations"]]


def test_compilation_error_after_a_good_compilation_of_the_same_kernel_is_a_new_failed_one(db, tmp_path):
    # Real: add_kernel compiled with BLOCK_SIZE=1024, then with 1000. Triton raises the CompilationError
    # in ast_to_ttir, before any dump, so the good compilation stays ok and the error is a second one.
    log = (FIXTURES / "recompile_add_kernel_triton39.log.gz").read_bytes()
    run = ingest_paths(db, [write(tmp_path, "dump.log.gz", log)])
    assert brief(run) == [
        ("add_kernel", "log", "ok", None, "cuda:90"),
        # Every other compilation of the run comes from this log and was built for cuda:90.
        ("add_kernel", "diagnostic", "failed", POWER_OF_2, "cuda:90"),
    ]
    assert run["compilations"][0]["snapshots"] == {"mlir": 76, "internal": 2, "llvm": 0}
    assert run["diagnostics"] == []  # only diagnostics of no compilation stay at the top
    [diagnostic] = run["compilation_diagnostics"]
    assert (diagnostic["kind"], diagnostic["compilation"], diagnostic["kernel"]) == ("compilation_error", 2, "add_kernel")


def test_compilation_error_appended_to_a_log_marks_its_kernel_failed_in_log_order(db, tmp_path):
    after = ingest_paths(db, [write(tmp_path, "after.log", LOG + COMPILATION_ERROR)])
    assert brief(after) == [
        ("add_kernel", "log", "ok", None, "cuda:90"),
        ("arange_kernel", "diagnostic", "failed", POWER_OF_2, "cuda:90"),
    ]
    assert after["diagnostics"] == [] and after["compilation_diagnostics"][0]["compilation"] == 2
    before = ingest_paths(db, [write(tmp_path, "before.log", COMPILATION_ERROR + LOG)])
    assert [(c["kernel"], c["status"]) for c in before["compilations"]] == [("arange_kernel", "failed"), ("add_kernel", "ok")]


def test_compilation_error_alone_or_from_another_log_gets_no_borrowed_target(db, tmp_path):
    alone = ingest_paths(db, [FIXTURES / "compilation_error_triton39.txt"])
    assert brief(alone) == [("arange_kernel", "diagnostic", "failed", POWER_OF_2, None)]
    assert alone["diagnostics"] == []
    # The error's own log says nothing about its target: the other log's compilations may be another process's.
    apart = ingest_paths(db, [write(tmp_path, "dump.log", LOG), FIXTURES / "compilation_error_triton39.txt"])
    assert brief(apart) == [
        ("add_kernel", "log", "ok", None, "cuda:90"),
        ("arange_kernel", "diagnostic", "failed", POWER_OF_2, None),
    ]


def test_nested_compilation_error_fails_the_kernel_not_its_helper(db):
    run = ingest_paths(db, [FIXTURES / "compilation_error_nested_triton39.txt"])
    assert brief(run) == [("outer_kernel", "diagnostic", "failed", POWER_OF_2, None)]


def test_traceback_with_a_frame_in_an_uploaded_jit_function_fails_that_kernel(db, tmp_path):
    traceback = FIXTURES / "interpreter_error_triton39.txt"
    source = write(tmp_path, "kernels.py", (FIXTURES / "triton39_src" / "kernels.py").read_bytes())
    run = ingest_paths(db, [traceback, source])
    reason = 'triton.runtime.errors.InterpreterError: ValueError("arange\'s range must be a power of 2")'
    assert brief(run) == [("add_kernel", "diagnostic", "failed", reason, None)]
    assert run["diagnostics"] == []
    # Without the source nothing says which kernel it was: the traceback is the run's.
    alone = ingest_paths(db, [traceback])
    assert alone["compilations"] == [] and [d["kind"] for d in alone["diagnostics"]] == ["traceback"]
