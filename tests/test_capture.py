"""`irlens capture` end to end on a real Triton compile (cuda:90, no GPU needed): the run holds the
kernel's passes, its cache stages and its Python source; exit codes and SIGINT reach the program."""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from app.ingest.disassembler import find_disassembler
from bench.server import serve
from tests.conftest import REPO, fresh_db_url, stored_blobs

pytest.importorskip("triton", reason="irlens capture tests compile a real kernel: install the test extra")

PROGRAM = REPO / "tests" / "triton_program.py"
IRLENS = [sys.executable, "-m", "app.cli"]


def irlens(*args: str, cwd: Path | None = None, **settings: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), **settings}
    return subprocess.run([*IRLENS, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, check=False, timeout=300)


def get_json(db_url: str, path: str) -> dict:
    got = irlens("serve", "--db", db_url, "--get", path)
    assert got.returncode == 0, got.stdout + got.stderr
    return json.loads(got.stdout)


def run_json(stdout: str) -> dict:
    """The JSON object printed after the program's own output."""
    start = 0 if stdout.startswith("{") else stdout.index("\n{") + 1
    return json.loads(stdout[start:])


def test_capture_stores_passes_cache_stages_and_python_source(tmp_path: Path):
    db_url = fresh_db_url(tmp_path)
    # compaction on (the suite turns it off): capture compacts what it stored, as ingest does
    done = irlens("capture", "--db", db_url, "--llvm", "--timing", "--json", "--tag", "ci",
                  "--", sys.executable, str(PROGRAM), cwd=tmp_path, IRLENS_RECOMPRESS_LEVEL="19")
    assert done.returncode == 0, done.stderr[-3000:]
    # the program's stdout comes first, untouched; its stderr (the dumps) still reached the terminal
    assert done.stdout.startswith("compiled add_kernel\n")
    assert "// -----// IR Dump Before " in done.stderr
    summary = run_json(done.stdout)
    assert summary["compaction"]["frames"] > 0 and stored_blobs(db_url)[1] == 0  # no frame left as ingested
    (compilation,) = summary["compilations"]
    assert compilation["kernel"] == "add_kernel" and compilation["status"] == "ok"
    # the version the installed wheel says (the test extra pins it), as the capture's cache metadata gives it
    assert compilation["target"] == "cuda:90" and compilation["triton_version"] == importlib.metadata.version("triton")
    assert compilation["snapshots"]["mlir"] > 20 and compilation["snapshots"]["llvm"] > 0  # --llvm
    assert {"ttir", "ttgir", "llir", "ptx", "json", "cubin"} <= set(compilation["artifacts"])
    if find_disassembler().tool:  # the Triton wheel bundles nvdisasm: its SASS sits beside the PTX
        assert "sass" in compilation["artifacts"]
    assert compilation["cache_match"] == "ttgir"  # the cache folder is tied to the log's compilation

    run = get_json(db_url, summary["url"] + ".json")
    assert run["title"] == f"capture: {sys.executable} {PROGRAM}" and run["tags"] == ["ci"]
    sources = [entry["path"] for entry in run["logs"] if entry["role"] == "source"]
    assert "triton_program.py" in sources
    assert run["compilations"][0]["compile_seconds"]  # --timing: the reports were tied to it

    detail = get_json(db_url, compilation["url"] + ".json")
    passes = {snapshot["pass_arg"] for snapshot in detail["snapshots"]}
    assert {"inline", "convert-triton-to-tritongpu", "tritongpu-coalesce", "convert-triton-gpu-to-llvm"} <= passes
    # the IR's locations name the captured source, and the map page quotes its lines
    line = PROGRAM.read_text().splitlines().index("    x = tl.load(x_ptr + offsets, mask=mask)") + 1
    source_map = get_json(db_url, compilation["url"] + "/map.json?" + urlencode({"file": str(PROGRAM), "line": line}))
    assert source_map["source"] == "triton_program.py"
    assert source_map["source_line"] == "    x = tl.load(x_ptr + offsets, mask=mask)"
    assert any(row["lines"] for row in source_map["snapshots"])


def test_capture_passes_the_exit_code_through_and_still_stores_the_run(tmp_path: Path):
    db_url = fresh_db_url(tmp_path)
    done = irlens("capture", "--db", db_url, "--", sys.executable, str(PROGRAM), "--exit", "3")
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].startswith("run ")
    missing = irlens("capture", "--db", db_url, "--", str(tmp_path / "no-such-program"))
    assert missing.returncode == 127 and "cannot run" in missing.stderr
    nothing = irlens("capture", "--db", db_url, "--", sys.executable, "-c", "pass")
    assert nothing.returncode == 2 and "nothing to store" in nothing.stderr


def test_sigint_reaches_the_program_and_what_it_compiled_is_stored(tmp_path: Path):
    db_url = fresh_db_url(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    errors = tmp_path / "stderr.txt"  # a file, not a pipe: nobody reads the dumps while the program waits
    # As from a shell: a test runner started in the background may ignore SIGINT, and children inherit
    # that; a handled signal is reset to its default in the child.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with open(errors, "w") as stderr:
            process = subprocess.Popen(
                [*IRLENS, "capture", "--db", db_url, "--json", "--", sys.executable, str(PROGRAM), "--wait"],
                stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, env=env, text=True,
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert process.stdout.readline() == "compiled add_kernel\n"
        assert process.stdout.readline() == "ready\n"
        started = time.monotonic()
        process.send_signal(signal.SIGINT)  # to irlens alone, which passes it on
        out, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    err = errors.read_text()
    assert time.monotonic() - started < 100  # the program did not sleep its 120 s out
    assert process.returncode == 128 + signal.SIGINT, err[-3000:]
    assert "KeyboardInterrupt" in err and "the program was interrupted" in err
    (compilation,) = run_json(out)["compilations"]
    assert compilation["kernel"] == "add_kernel" and compilation["snapshots"]["mlir"] > 20


def test_capture_uploads_to_a_server_with_a_token(tmp_path: Path):
    db_url = fresh_db_url(tmp_path)
    with serve(db_url, tmp_path / "data", env={"IRLENS_REQUIRE_TOKEN": "true"}) as (url, _log):
        made = irlens("token", "create", "ci", "--db", db_url)
        token = made.stdout.strip().splitlines()[-1]
        done = irlens("capture", "--upload", url, "--token", token, "--title", "uploaded capture",
                      "--", sys.executable, str(PROGRAM))
        assert done.returncode == 0, done.stderr[-3000:]
        last = done.stdout.splitlines()[-1]
        assert last.startswith("run ") and last.split(": ", 1)[1].startswith(url)
        run = get_json(db_url, "/runs/" + last.split()[1].rstrip(":") + ".json")
    assert run["title"] == "uploaded capture" and run["owner"] == "ci"
    assert run["compilations"][0]["kernel"] == "add_kernel"
    assert "triton_program.py" in [entry["path"] for entry in run["logs"] if entry["role"] == "source"]


def test_capture_keeps_stdout_where_the_autotuner_prints(tmp_path: Path):
    """The program compiles (no GPU here, so Triton's autotuner cannot benchmark) and prints to stdout
    what TRITON_PRINT_AUTOTUNING makes Triton 3.5+ print, in its exact format (as in
    tests/fixtures/gpu_runs/autotune.tar.xz), after 16 MB of other prints: stdout reaches the
    terminal whole and in order, and the run reads the autotuning result from it."""
    config = ("BLOCK_M: 128, BLOCK_N: 128, BLOCK_K: 64, GROUP_M: 8, num_warps: 8, num_ctas: 1, num_stages: 4, "
              "maxnreg: None")
    program = tmp_path / "autotune_prints.py"
    program.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(PROGRAM.parent)!r})\n"
        "import triton_program\n"
        "triton_program.main()\n"
        "assert os.environ['TRITON_PRINT_AUTOTUNING'] == '1'\n"
        "for i in range(200_000):\n"
        "    print(f'step {i:07d} ' + 'x' * 70)\n"
        "    if i % 50_000 == 0: print('a stderr line', i, file=sys.stderr)\n"
        f"print('Autotuning kernel add_kernel with config {config}')\n"
        "print('Triton autotuning for function add_kernel,\\nwith key as (1024,),\\nfinished after 1.50s,')\n"
        f"print('best config selected: {config};')\n"
    )
    db_url = fresh_db_url(tmp_path)
    done = irlens("capture", "--db", db_url, "--json", "--", sys.executable, str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split("\n")
    assert lines[0] == "compiled add_kernel" and lines[200_000] == f"step {199_999:07d} " + "x" * 70
    assert lines[200_001] == f"Autotuning kernel add_kernel with config {config}"
    assert "a stderr line 150000" in done.stderr
    run = get_json(db_url, run_json("\n".join(lines[200_006:]))["url"] + ".json")
    assert "stdout.txt" in [entry["path"].rsplit("/", 1)[-1] for entry in run["logs"]]
    (entry,) = run["autotune"]
    assert entry["kernel"] == "add_kernel" and entry["key"] == "(1024,)" and entry["seconds"] == 1.5
    assert entry["best_config"]["BLOCK_M"] == 128 and entry["best_config"]["num_warps"] == 8
