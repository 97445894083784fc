"""`irlens capture --dsl` (app/ingest/dsl_capture.py): which switches each tile DSL gets, what the
program sees, and the Helion files found from the generated code's `# src[...]` names (the real H200
run of tests/fixtures/helion/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from app.ingest.dsl_capture import DSLS, dsl_environment, helion_sources, parse_dsls, written
from app.store.models import InputRecord
from tests.conftest import FIXTURES, REPO

SWITCHES = ("HELION_PRINT_OUTPUT_CODE", "HELION_AUTOTUNE_LOG", "HELION_KEEP_CACHE", "HELION_KEEP_TRITON_CACHE",
            "TRITON_STORE_BINARY_ONLY",
            "CUTE_DSL_KEEP", "CUTE_DSL_DUMP_DIR", "CUTE_DSL_LINEINFO", "CUDA_TILE_LOGS", "CUDA_TILE_DUMP_BYTECODE",
            "CUDA_TILE_DUMP_TILEIR", "IRLENS_TILELANG_DUMP_DIR")
# prints the switches it was started with, then exits without compiling anything
SHOW_ENV = f"import json, os; print(json.dumps({{k: os.environ.get(k) for k in {SWITCHES!r}}}))"


def test_dsl_names():
    assert parse_dsls("all") == DSLS and parse_dsls("none") == () and parse_dsls("") == ()
    assert parse_dsls("cute, Helion") == ("helion", "cute")  # in DSLS order, any case
    with pytest.raises(ValueError, match="unknown DSL triton"):
        parse_dsls("helion,triton")


def test_each_dsl_writes_into_the_capture_folder(tmp_path):
    env = {"CUTE_DSL_KEEP": "ptx"}  # the user's own choice stays
    dsl_environment(env, tmp_path, DSLS)
    assert env["CUTE_DSL_KEEP"] == "ptx" and env["HELION_PRINT_OUTPUT_CODE"] == "1"
    assert env["CUDA_TILE_LOGS"] == "CUTILEIR,TILEIR" and env["TRITON_STORE_BINARY_ONLY"] == "0"
    for key in ("CUTE_DSL_DUMP_DIR", "CUDA_TILE_DUMP_BYTECODE", "CUDA_TILE_DUMP_TILEIR", "IRLENS_TILELANG_DUMP_DIR",
                "HELION_AUTOTUNE_LOG"):
        assert Path(env[key]).parent == tmp_path
    assert written(tmp_path, DSLS) == []  # nothing written yet: nothing to ingest
    bytecode = Path(env["CUDA_TILE_DUMP_BYTECODE"])
    bytecode.mkdir()
    (bytecode / "k.tileirbc").write_bytes(b"\x7fTileIR")
    Path(env["HELION_AUTOTUNE_LOG"] + ".csv").write_text("timestamp_s,config_index\n")
    assert written(tmp_path, DSLS) == [env["HELION_AUTOTUNE_LOG"] + ".csv", str(bytecode)]
    assert written(tmp_path, ("helion",)) == [env["HELION_AUTOTUNE_LOG"] + ".csv"]


def capture(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", "capture", "--db", "sqlite:///:memory:", *args],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


@pytest.mark.parametrize("dsl", [None, "helion", "none"])
def test_the_program_runs_with_the_chosen_switches(dsl):
    args = ["--dsl", dsl] if dsl else []
    done = capture(*args, "--", sys.executable, "-c", SHOW_ENV, TRITON_STORE_BINARY_ONLY="1")
    assert done.returncode == 2 and "nothing to store" in done.stderr  # it compiled nothing
    seen = json.loads(done.stdout.splitlines()[0])
    assert seen["TRITON_STORE_BINARY_ONLY"] == "0"  # whatever the user set: Helion's autotuner would set 1
    if dsl == "none":
        assert all(value is None for key, value in seen.items() if key != "TRITON_STORE_BINARY_ONLY")
    else:
        assert seen["HELION_PRINT_OUTPUT_CODE"] == "1" and seen["HELION_KEEP_CACHE"] == "1"
        assert seen["HELION_KEEP_TRITON_CACHE"] == "1"
        assert Path(seen["HELION_AUTOTUNE_LOG"]).name == "helion-autotune"
    if dsl is None:  # all by default
        assert seen["CUTE_DSL_KEEP"] == "all" and seen["CUDA_TILE_LOGS"] == "CUTILEIR,TILEIR"
        assert seen["IRLENS_TILELANG_DUMP_DIR"].endswith("tilelang-dump-ir")
    if dsl == "helion":
        assert seen["CUTE_DSL_KEEP"] is None and seen["CUDA_TILE_LOGS"] is None


def test_the_programs_own_sitecustomize_still_runs(tmp_path):
    """Capture's start-up file (TileLang's hook) comes first on PYTHONPATH; the program's own
    sitecustomize.py runs after it, as it would without capture."""
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = 'yes'\n")
    show = "import os, sys; print(os.environ.get('USER_SITE_RAN'), any(type(f).__name__ == '_IrlensTileLangDumps' for f in sys.meta_path))"
    done = capture("--", sys.executable, "-c", show, PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}")
    assert done.stdout.split()[:2] == ["yes", "True"], done.stdout + done.stderr[-2000:]
    plain = capture("--dsl", "none", "--", sys.executable, "-c", show, PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}")
    assert plain.stdout.split()[:2] == ["yes", "False"]


def test_an_unknown_dsl_runs_nothing():
    done = capture("--dsl", "helion,pallas", "--", sys.executable, "-c", "print('ran')")
    assert done.returncode == 2 and "unknown DSL pallas" in done.stderr and "ran" not in done.stdout


def test_the_helion_file_is_found_by_the_lines_the_generated_code_quotes(tmp_path):
    with tarfile.open(FIXTURES / "helion" / "helion_h200_triton36.tar.xz") as archive:
        archive.extractall(tmp_path, filter="data")
    run = tmp_path / "helion_h200"
    generated = sorted((run / "fixed" / "generated").rglob("*.py"))
    # a file of the same name that is not the kernel's source, under the working folder
    decoy = tmp_path / "work" / "old" / "helion_kernels.py"
    decoy.parent.mkdir(parents=True)
    decoy.write_text("print('not the kernels')\n")
    program = run / "helion_kernels.py"
    assert helion_sources(generated, ["python3", str(program)], cwd=tmp_path / "work") == [str(program)]
    # the same, found by walking the working folder when the program is named otherwise
    (tmp_path / "work" / "src").mkdir()
    moved = tmp_path / "work" / "src" / "helion_kernels.py"
    moved.write_text(program.read_text())
    assert helion_sources(generated, ["python3", "-m", "kernels"], cwd=tmp_path / "work") == [str(moved)]
    # and nothing when no generated code names one
    assert helion_sources([program], ["python3", str(program)], cwd=tmp_path) == []


HELION_PYTHON = os.environ.get("IRLENS_TEST_HELION_PYTHON")  # a Python with helion, torch and triton


@pytest.mark.skipif(not HELION_PYTHON, reason="set IRLENS_TEST_HELION_PYTHON to a Python with helion installed")
def test_capturing_a_helion_program_reaches_its_helion_file(tmp_path):
    """A real Helion program under `irlens capture` (no GPU: Helion generates the code, Triton compiles it
    for sm90): the log holds the printed modules, capture finds helion_kernels.py beside the program, and
    each kernel's map reaches it."""
    for name in ("helion_kernels.py", "cpu_compile.py"):
        (tmp_path / name).write_text((FIXTURES / "helion" / name).read_text())
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    done = subprocess.run([sys.executable, "-m", "app.cli", "capture", "--db", db_url, "--json", "--",
                           HELION_PYTHON, "cpu_compile.py"], capture_output=True, text=True, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, timeout=600, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("# Output code written to: ") == 2
    summary = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert {c["kernel"] for c in summary["compilations"]} == {"_helion_add", "_helion_matmul"}
    for compilation in summary["compilations"]:
        got = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--db", db_url, "--get",
                              compilation["url"] + "/map.json"], capture_output=True, text=True, timeout=120,
                             check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        data = json.loads(got.stdout)
        helion = next(item for item in data["files"] if item["file"].endswith("helion_kernels.py"))
        assert helion["via"] and helion["lines"] > 0 and data["overview"]["path"] == helion["file"]


TILELANG_PYTHON = os.environ.get("IRLENS_TEST_TILELANG_PYTHON")  # a Python with tilelang (and nvcc on PATH)


@pytest.mark.skipif(not TILELANG_PYTHON, reason="set IRLENS_TEST_TILELANG_PYTHON to a Python with tilelang installed")
def test_tilelang_dumps_every_pass_under_capture_without_asking(tmp_path):
    """TileLang's dumps are a pass-config the program did not pass: capture's start-up hook adds it, and
    the per-pass files are stored with the run (without the hook the program leaves nothing to store)."""
    program = FIXTURES / "capture_dsl" / "tl_add.py"
    assert "dump_ir" not in program.read_text()
    plain = capture("--dsl", "none", "--", TILELANG_PYTHON, str(program))
    assert plain.returncode == 2 and "nothing to store" in plain.stderr
    db_url = f"sqlite:///{tmp_path / 'tl.db'}"
    done = subprocess.run([sys.executable, "-m", "app.cli", "capture", "--db", db_url, "--dsl", "tilelang", "--json",
                           "--", TILELANG_PYTHON, str(program)], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=600, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    engine = create_engine(db_url)
    with engine.connect() as connection:
        paths = sorted(connection.execute(select(InputRecord.path)).scalars())
    engine.dispose()
    dumps = [path for path in paths if path.startswith("tilelang-dump-ir/")]
    assert dumps and dumps[0] == "tilelang-dump-ir/000/000_pass_fn.py"
    assert all(Path(path).parent.name == "000" for path in dumps)  # one compile, one folder
    # read as TileLang's per-pass dumps (parsers/tilelang/): one compilation, a snapshot per file
    (compilation,) = json.loads(done.stdout[done.stdout.index("\n{") + 1:])["compilations"]
    assert compilation["kernel"] == "add_kernel" and compilation["snapshots"]["tvmscript"] == len(dumps)
