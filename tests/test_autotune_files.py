"""Autotuning results from files of their own (parsers/autotuning/autotune_files.py), as the run JSON and the
Variants table show them.

- Helion: tests/fixtures/helion_autotune/matmul_autotune.csv and .meta.jsonl were written by Helion
  1.5.1's own AutotuneLogSink (make_fixture.py there: only torch's exception classes and
  helion._dist_utils stubbed; made-up timings, Helion's layout). The reference here is the CSV read
  with csv.DictReader and Helion's rules: per run_id and config_id, the last result row (not
  ``started``) holds its status and time. The 0.2.x form (no run_id) is built as its writer wrote it
  (commit 06cea843, helion/autotuner/logger.py: header ``timestamp_s,config_index,generation,status,
  perf_ms,compile_time_s,config``, then ``f"{perf:.6f}"``, ``f"{compile_time:.2f}"``, ``str(config)``).
- Triton: tests/fixtures/triton_autotune_cache/*/matmul_kernel.autotune.json were written by Triton
  3.8's own ``Autotuner.check_disk_cache`` (``cache.put(json.dumps({"key": tuning_key,
  "configs_timings": [(config.__dict__, timings) for config, timings in self.configs_timings.items()
  if not config.pre_hook]}), file_name, binary=False)``) with the real H100 timings that the run in
  tests/fixtures/gpu_runs/autotune.tar.xz printed; they are checked against that run's own printed
  ``configs_timings`` and ``best config selected`` lines.
"""

from __future__ import annotations

import csv
import json
import re
import tarfile
from pathlib import Path

import pytest

from parsers import registry
from parsers.autotuning.autotune_files import HelionLogReader, parse_helion_config
from tests.conftest import REPO
from tests.test_snapshot_pages import make_site

FIXTURES = REPO / "tests" / "fixtures"
HELION = FIXTURES / "helion_autotune"
TRITON_CACHE = FIXTURES / "triton_autotune_cache"
GPU_RUN = FIXTURES / "gpu_runs" / "autotune.tar.xz"


def helion_reference(path: Path) -> dict[str, dict[str, dict]]:
    """run_id -> config_id -> {status, perf, compile_time} by Helion's rules, from csv.DictReader."""
    out: dict[str, dict[str, dict]] = {}
    with path.open(newline="") as file:
        for row in csv.DictReader(file):
            mine = out.setdefault(row["run_id"], {}).setdefault(row["config_id"], {"config": row["config"]})
            if row["compile_time_s"]:
                mine["compile_time"] = float(row["compile_time_s"])
            if row["status"] != "started":
                mine["status"], mine["perf"] = row["status"], float(row["perf_ms"]) if row["perf_ms"] else None
    return out


def test_helion_log_and_sidecar_in_the_run_json(tmp_path):
    client, run = make_site(tmp_path, [HELION / "matmul_autotune.csv", HELION / "matmul_autotune.meta.jsonl"])
    with client:
        data = client.get(f"/runs/{run['run']}.json").json()
    for path in HELION.glob("matmul_autotune.*"):
        assert registry.classify(path.name, path.read_bytes()[:8192]).role == "autotune"
    meta = {json.loads(line)["run_id"]: json.loads(line) for line in (HELION / "matmul_autotune.meta.jsonl").open()}
    reference = helion_reference(HELION / "matmul_autotune.csv")
    entries = data["autotune"]
    assert [e["kind"] for e in entries] == ["helion", "helion"] and len(reference) == 2
    for entry, (run_id, configs) in zip(entries, reference.items(), strict=True):
        assert entry["kernel"] == meta[run_id]["kernel_name"] == "matmul"
        assert entry["shapes"] == meta[run_id]["input_shapes"]
        assert len(entry["choices"]) == len(configs)  # a config's started, result and rebenchmark rows: one choice
        ok = {cid: c["perf"] for cid, c in configs.items() if c["status"] in ("ok", "deduplicated")}
        fastest = min(ok, key=ok.get)
        for choice, (config_id, expected) in zip(entry["choices"], configs.items(), strict=True):
            assert choice["config"] == meta[run_id]["configs"][config_id]  # parsed str(Config) == Helion's dict
            assert choice["compile_time"] == expected.get("compile_time")
            if config_id in ok:
                assert choice["status"] == "ok" and choice["time_ms"] == expected["perf"]
                assert choice["percent"] == round(100 * ok[fastest] / expected["perf"], 1)
            else:
                assert choice["status"] == "failed" and choice["error"] == expected["status"]
                assert choice["time_ms"] is None and choice["percent"] is None
        (winner,) = [c for c in entry["choices"] if c["name"] == entry["winner"]]
        assert winner["time_ms"] == ok[fastest] and winner["percent"] == 100.0
    # the rebenchmarked leader of the first session shows its later time, not the first one
    first = entries[0]["choices"][1]
    assert first["time_ms"] == 0.0295 and first["status"] == "ok"


def test_helion_first_form_without_run_id():
    config = "Config(block_sizes=[32, 32], num_warps=4, num_stages=2)"
    text = ("timestamp_s,config_index,generation,status,perf_ms,compile_time_s,config\r\n"
            f'0.50,1,0,ok,{0.125:.6f},{1.5:.2f},"{config}"\r\n'
            f'0.90,2,0,error,,{0.25:.2f},"Config(block_sizes=[64, 64], num_warps=8, num_stages=3)"\r\n'
            f'1.40,3,0,ok,{0.25:.6f},,"Config(block_sizes=[16, 16], num_warps=2, num_stages=1)"\r\n')
    assert registry.classify("tune.csv", text.encode()).role == "autotune"
    (entry,) = HelionLogReader("tune.csv").read(text.splitlines(keepends=True))
    assert entry["kernel"] is None and entry["run_id"] is None
    assert [(c["status"], c["time_ms"], c["percent"]) for c in entry["choices"]] == [
        ("ok", 0.125, 100.0), ("failed", None, None), ("ok", 0.25, 50.0)]
    assert entry["winner"] == "config 1" and entry["choices"][0]["config"] == parse_helion_config(config)
    assert entry["choices"][0]["config"] == {"block_sizes": [32, 32], "num_warps": 4, "num_stages": 2}


def test_other_csv_files_are_not_helion_logs():
    others = [
        b"kernel,status,perf_ms,config\nmm,ok,0.1,a\n",  # some columns, not Helion's
        b'"ID","Process ID","Process Name","Kernel Name","Metric Name","Metric Value"\n',  # ncu details
        b"timestamp_s,config_index,generation,status,perf_ms,compile_time_s,config_name,extra\n",
    ]
    for head in others:
        assert registry.classify("matmul_autotune.csv", head).role != "autotune"
    # and a damaged row is reported, the rest kept
    reader = HelionLogReader("x.csv")
    (entry,) = reader.read(["run_id,timestamp_s,config_id,generation,status,perf_ms,compile_time_s,config\n",
                            'r,0.1,a,0,ok,0.5,1.0,"Config(num_warps=4)"\n', "r,0.2,b,0,ok\n"])
    assert len(entry["choices"]) == 1 and len(reader.problems) == 1 and "row 3" in reader.problems[0]


def printed_timings(log: str) -> list[tuple[tuple, dict[str, list[float]], str]]:
    """(key, config text -> quantiles, best config text) as the H100 run printed them."""
    keys = re.findall(r"^with key as (.*),$", log, re.MULTILINE)
    timings = [json.loads(t) for t in re.findall(r"configs_timings \(ms, do_bench quantiles\): (.*)$", log, re.MULTILINE)]
    best = re.findall(r"^best config selected: (.*);$", log, re.MULTILINE)
    return list(zip(keys, timings, best, strict=True))


@pytest.fixture(scope="module")
def triton_cached(tmp_path_factory):
    client, run = make_site(tmp_path_factory.mktemp("cached"), [GPU_RUN, TRITON_CACHE])
    with tarfile.open(GPU_RUN, "r:xz") as tar:
        log = tar.extractfile("autotune/run.log").read().decode()  # type: ignore[union-attr]
    with client:
        yield client, client.get(f"/runs/{run['run']}.json").json(), log


def config_text(config: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in config.items())


def test_triton_cache_timings_fill_the_printed_sessions(triton_cached):
    _, data, log = triton_cached
    printed = printed_timings(log)
    triton = [e for e in data["autotune"] if e["kind"] == "triton"]
    assert len(printed) == 2 and len(triton) == 2  # merged into the log's two sessions, not added beside them
    for key, timings, best in printed:
        (entry,) = [e for e in triton if e["key"] == key]
        assert entry["timings_from"].endswith("matmul_kernel.autotune.json")
        assert len(entry["choices"]) == len(timings) == 5
        medians = {text: q[0] for text, q in timings.items() if q[0] != float("inf")}
        for choice in entry["choices"]:
            text = config_text(choice["config"])
            if text in medians:
                assert choice["time_ms"] == medians[text]
                assert choice["percent"] == round(100 * min(medians.values()) / medians[text], 1)
            else:
                assert choice["status"] == "failed" and choice["time_ms"] is None
        (winner,) = [c for c in entry["choices"] if c["name"] == entry["winner"]]
        assert config_text(winner["config"]) == best  # Triton's pick, also on a tie of medians
    # key 2: two configs share the median; Triton's pick is the one with the lower 20th percentile
    key2 = printed[1][1]
    tied = [t for t, q in key2.items() if q[0] == min(v[0] for v in key2.values())]
    assert len(tied) == 2 and printed[1][2] == min(tied, key=lambda t: key2[t])


def test_triton_cache_timings_in_the_variants_table(triton_cached):
    client, data, log = triton_cached
    printed = printed_timings(log)
    html = client.get(data["url"]).text
    rows = re.findall(r'<tr class="variant[^"]*".*?</tr>', html, re.DOTALL)
    assert len(rows) == 5
    for row in rows:
        cell = re.search(r'<td class="config">(.*?)</td>', row).group(1)
        values = dict(re.findall(r'<span class="faint">([\w ()]+)</span>=(\w+)', cell))
        m, n, k = values.pop("tile (derived)").split("x")  # the table shows the tile the IR holds
        values.update(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k)
        (text,) = [t for t in printed[0][1]
                   if all(dict(p.split(": ") for p in t.split(", ")).get(k, v) == v for k, v in values.items())]
        shown = re.findall(r"(\d+\.\d{4}) ms", row)
        expected = [f"{timings[text][0]:.4f}" for _, timings, _ in printed if timings[text][0] != float("inf")]
        assert shown == expected
        won = sum(1 for _, _, best in printed if best == text)
        assert ('class="badge ok winner"' in row) == bool(won)
