"""The run page of a 1 GB-class capture (issue 33): hundreds of compilations, thousands of warnings.

The input is `inputs.damaged_big_log(GiB)`: the corpus logs copied up to 1 GiB, kernels renamed per
copy, every 4th dump cut in half as interleaving threads cut them (each named in a warning). It is
ingested with `irlens ingest` beside the corpus's small gpu_autotune capture, whose run page is the
baseline, then prepared as a server does in the background once a run is stored (`irlens index`). Each cold figure is the first request of the page to a fresh `irlens serve` (its time to
first byte, and the server's CPU time for it); the page's size is its HTML bytes.
Targets: ≤ 500 KB of HTML and ≤ 500 ms cold on the server.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench import inputs, web
from bench.inputs import REPO


def _ingest(paths: list[Path], db_path: Path) -> tuple[dict, float]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "ingest", "--db", f"sqlite:///{db_path}", "--json", "--quiet",
         *map(str, paths)], cwd=REPO, capture_output=True, check=True)
    seconds = time.perf_counter() - start
    run = json.loads(result.stdout)
    # what a running server does in the background once a run is stored (app/insight/precompute.py)
    subprocess.run([sys.executable, "-m", "app.cli", "index", "--quiet", "--db", f"sqlite:///{db_path}", run["run"]],
                   cwd=REPO, capture_output=True, check=True)
    return run, seconds


# a browser's page view (JSON URLs answer JSON), and the bytes as sent without compression
HEADERS = {"Accept": "text/html,application/xhtml+xml", "Accept-Encoding": "identity"}


def _cold(db_path: Path, url: str) -> tuple[web.Sample, float | None]:
    with web.serve(db_path) as base, httpx.Client(base_url=base, timeout=600, headers=HEADERS) as client:
        web.fetch(client, "/-/health")  # the server is up; the page itself is still cold
        pid = web._server_pid()
        before = web._cpu_seconds(pid)
        sample = web.fetch(client, url)
        after = web._cpu_seconds(pid)
        assert sample.status == 200, sample
        return sample, (after - before) if before is not None and after is not None else None


def bench_bigrun(workdir: Path, size: int = inputs.GiB, rounds: int = 3, warm_repeats: int = 5) -> dict:
    log = inputs.damaged_big_log(size)
    db_path = workdir / "bigrun.db"
    big, seconds = _ingest([log], db_path)
    small, _ = _ingest([inputs.CORPUS / "gpu_autotune.tar.xz"], db_path)
    pages = {"big": big["url"], "big_json": big["url"] + ".json", "baseline": small["url"]}
    cold: dict[str, list[float]] = {name: [] for name in pages}
    cpu: dict[str, list[float]] = {name: [] for name in pages}
    sizes: dict[str, int] = {}
    for _ in range(rounds):
        for name, url in pages.items():
            sample, spent = _cold(db_path, url)
            cold[name].append(sample.ttfb)
            sizes[name] = sample.size
            if spent is not None:
                cpu[name].append(spent)
    with web.serve(db_path) as base, httpx.Client(base_url=base, timeout=600, headers=HEADERS) as client:
        warm = [web.fetch(client, pages["big"]).ttfb for _ in range(warm_repeats + 1)][1:]
    medians = {name: statistics.median(values) for name, values in cold.items()}
    return {
        "log_bytes": log.stat().st_size, "ingest_seconds": seconds,
        "compilations": len(big["compilations"]), "warnings": len(big["warnings"]),
        "html_bytes": sizes["big"], "json_bytes": sizes["big_json"], "baseline_html_bytes": sizes["baseline"],
        "cold_median": medians, "cold_all": cold,
        "cpu_median": {name: statistics.median(values) for name, values in cpu.items() if values},
        "warm_p50": statistics.median(warm),
        "ratio_to_baseline": medians["big"] / medians["baseline"],
    }


def table_rows(result: dict | None, fmt) -> list[tuple[str, str, str, str]]:
    if not result:
        return []
    shape = (f"{result['log_bytes'] / 1e6:,.0f} MB log, {result['compilations']:,} compilations, "
             f"{result['warnings']:,} warnings")
    cold, cpu = result["cold_median"], result.get("cpu_median", {})
    return [
        (f"big run ({shape}): ingest", fmt(result["ingest_seconds"]), "", ""),
        ("small run page (gpu_autotune), cold, server time (median): the baseline", fmt(cold["baseline"]), "1×", ""),
        ("big run page, cold, server time (median)", fmt(cold["big"]) + (f"; CPU {fmt(cpu['big'])}" if "big" in cpu else ""),
         f"{result['ratio_to_baseline']:.1f}×", "≤ 500 ms"),
        ("big run page, HTML size", f"{result['html_bytes'] / 1000:,.0f} KB", "", "≤ 500 KB"),
        ("big run page, warm, server time p50", fmt(result["warm_p50"]), "", ""),
        ("big run JSON (every compilation and warning), cold, server time; size",
         f"{fmt(cold['big_json'])}; {result['json_bytes'] / 1e6:,.1f} MB", "", ""),
    ]
