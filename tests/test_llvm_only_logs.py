"""A log of Triton's LLVM dumps alone (LLVM_IR_ENABLE_DUMP=1, no MLIR dumps) is split into one
compilation per compile, named after its kernel, with its status: a real Triton 3.8 capture of five
compiles (tests/fixtures/triton38_llvm_only.log.xz, see its .note). What each compile printed is read
from the script's own `== <label>` and `exit status` lines, not from the parser under test."""

from __future__ import annotations

import lzma
import re

from tests.conftest import FIXTURES, fresh_db_url, ingest_paths
from tests.fidelity_check import LLVM_PREFIXES

LOG = FIXTURES / "triton38_llvm_only.log.xz"
KERNELS = {"add": "vector_add_kernel", "copy": "copy_2d_kernel", "tmem": "tmem_round_trip_kernel",
           "clc": "work_stealing_kernel"}  # the capture script's labels (make_triton38_captures.py)
_EXIT = re.compile(rb"^   (\w+) (\S+): exit status (\d+), signal (\d+)$")


def _compiles(text: bytes) -> list[tuple[str, str, int]]:
    """(kernel, status, LLVM banners) of each compile, in log order."""
    compiles, banners = [], 0
    for line in text.split(b"\n"):
        if line.startswith(LLVM_PREFIXES):
            banners += 1
        exit_line = _EXIT.match(line)
        if exit_line:
            label, _, code, signal = exit_line.groups()
            status = "ok" if code == signal == b"0" else "failed"
            compiles.append((KERNELS[label.decode()], status, banners))
            banners = 0
    return compiles


def test_each_compile_of_an_llvm_only_log_is_one_compilation(tmp_path):
    from app.store.db import Database

    log = tmp_path / "llvm_only.log"
    log.write_bytes(lzma.decompress(LOG.read_bytes()))
    expected = _compiles(log.read_bytes())
    assert len(expected) == 5 and {status for _, status, _ in expected} == {"ok", "failed"}
    database = Database(fresh_db_url(tmp_path))
    try:
        run = ingest_paths(database, [log, FIXTURES / "triton38_kernels.py"])
    finally:
        database.dispose()
    got = [(c["kernel"], c["status"], c["snapshots"]["llvm"]) for c in run["compilations"]]
    assert not any(c["snapshots"]["mlir"] for c in run["compilations"])
    assert got == expected
    assert run["damaged"] == 0
    failed = [c for c in run["compilations"] if c["status"] == "failed"]
    assert failed[0]["status_reason"].startswith("Result 0 has an invalid layout")
    assert failed[0]["target"] is None  # the others' LLVM triple would not say it was compiled for hip
    assert failed[1]["status_reason"].startswith("LLVM ERROR: Cannot select")
