"""A real `irlens capture` made on an H100 (Triton 3.6, tests/fixtures/gpu_capture_h100_triton36/):
ingested here, every kernel the program launched is a compilation with its passes, its cache
stages and its Python source, and the run matches what `irlens capture --json` printed on the GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import urlencode

import pytest

from app.ingest.disassembler import find_disassembler
from app.settings import Settings
from tests.conftest import REPO, fresh_db_url

FIXTURE = REPO / "tests" / "fixtures" / "gpu_capture_h100_triton36"
PROGRAM = FIXTURE / "small_gpu_program.py"
# The path the IR's loc() entries name: where the program sat on the device.
DEVICE_PROGRAM = "/work/main/.gpucap/small_gpu_program.py"
# What to compare between the device's summary and ours: all but where files sat and the run's URLs.
SAME = ("kernel", "target", "triton_version", "status", "status_reason", "failed_pass", "snapshots",
        "changed", "artifacts", "num_warps", "num_stages", "num_ctas", "shared", "origin", "cache_match",
        "stages")


def irlens(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> tuple[str, dict]:
    db_url = fresh_db_url(tmp_path_factory.mktemp("gpucap"))
    return db_url, json.loads(irlens("ingest", "--db", db_url, "--json", str(FIXTURE / "capture.tar.xz")))


def get_json(db_url: str, path: str) -> dict:
    return json.loads(irlens("serve", "--db", db_url, "--get", path))


def _same(compilation: dict, with_sass: bool) -> dict:
    """The fields to compare; without a disassembler here, the SASS the device made is left out."""
    same = {key: compilation[key] for key in SAME}
    if not with_sass:
        artifacts = same["artifacts"]
        same["artifacts"] = ({k: v for k, v in artifacts.items() if k != "sass"} if isinstance(artifacts, dict)
                             else [a for a in artifacts if "sass" not in str(a)])
    return same


def test_the_run_is_the_one_capture_printed_on_the_device(ingested):
    _, ours = ingested
    device = json.loads((FIXTURE / "capture.json").read_text())
    with_sass = find_disassembler(Settings().sass_disassembler).tool is not None
    assert ours["damaged"] == device["damaged"] == 0
    assert ours["diagnostics"] == device["diagnostics"] == []
    assert device["warnings"] == []
    assert [w for w in ours["warnings"] if with_sass or "SASS not shown" not in str(w)] == []
    assert [c["kernel"] for c in device["compilations"]] == ["add_kernel", "scale_kernel", "scale_kernel"]
    assert [_same(c, with_sass) for c in ours["compilations"]] == \
        [_same(c, with_sass) for c in device["compilations"]]
    # the same cache folder joined to each compilation, under the archive's name here
    assert [c["cache"].removeprefix("capture.tar.xz/") for c in ours["compilations"]] == \
        [c["cache"] for c in device["compilations"]]
    # the device's capture found the program by the IR's locations and stored it as a source
    device_sources = [entry["path"] for entry in device["logs"] if entry["role"] == "source"]
    assert device_sources == ["small_gpu_program.py"]
    assert [entry["path"] for entry in ours["logs"] if entry["role"] == "source"] == \
        ["capture.tar.xz/small_gpu_program.py"]


def test_the_autotuner_compiled_both_configs(ingested):
    _, ours = ingested
    tuned = [c for c in ours["compilations"] if c["kernel"] == "scale_kernel"]
    assert sorted(c["num_warps"] for c in tuned) == [2, 4]
    assert len({c["cache"] for c in tuned}) == 2


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_launched_kernel_has_passes_cache_stages_and_python_source(ingested, index: int):
    db_url, ours = ingested
    compilation = ours["compilations"][index]
    assert compilation["status"] == "ok" and compilation["target"] == "cuda:90"
    assert compilation["triton_version"] == "3.6.0"
    detail = get_json(db_url, compilation["url"] + ".json")

    passes = [snapshot["pass_arg"] for snapshot in detail["snapshots"]]
    assert {"inline", "convert-triton-to-tritongpu", "tritongpu-coalesce", "convert-triton-gpu-to-llvm"} <= set(passes)
    assert [stage["stage"] for stage in detail["stages"]] == ["ttir", "ttgir", "llvm-dialect"]

    kernel = compilation["kernel"]
    files = {entry["kind"]: entry["name"] for entry in detail["files"]}
    for stage in ("source", "ttir", "ttgir", "llir", "ptx", "json", "cubin"):
        assert files[stage] == f"{kernel}.{stage}"
    assert files["grp"] == f"__grp__{kernel}.json"
    assert detail["metadata"]["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}

    # the loc() entries point into the captured Python source: the map quotes the kernel's own load
    lines = PROGRAM.read_text().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith(f"def {kernel}("))
    line = lines.index("    x = tl.load(x_ptr + offsets, mask=mask)", start) + 1
    query = urlencode({"file": DEVICE_PROGRAM, "line": line})
    source_map = get_json(db_url, compilation["url"] + "/map.json?" + query)
    assert source_map["source"] == "capture.tar.xz/small_gpu_program.py"
    assert source_map["source_line"] == "    x = tl.load(x_ptr + offsets, mask=mask)"
    assert any(row["lines"] for row in source_map["snapshots"])
