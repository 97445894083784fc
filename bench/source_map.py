"""The map page (a Python line in every pass) of a large compilation, in a run of ~8,000 snapshots.

The run is `inputs.map_run_log()` ingested with `irlens ingest`: a Blackwell capture whose
attention kernel has ~300 snapshots, most of them LLVM dumps of thousands of lines, then copies
of the corpus's sm90_llvm log. Each cold figure is the first request of that page to a fresh
`irlens serve`; the baseline is the compilation page of the same compilation, cold on another fresh
server in the same round: it reads the same snapshots' texts (for its op counts), so the ratio
says what the map page costs beyond reading the IR once.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx

from bench import inputs, web
from bench.inputs import REPO


def _ingest(log: Path, db_path: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "ingest", "--db", f"sqlite:///{db_path}", "--json", str(log)],
        cwd=REPO, capture_output=True, check=True,
    )
    run = json.loads(result.stdout)
    # what a running server does in the background once a run is stored (app/insight/precompute.py)
    subprocess.run([sys.executable, "-m", "app.cli", "index", "--quiet", "--db", f"sqlite:///{db_path}", run["run"]],
                   cwd=REPO, capture_output=True, check=True)
    return run


def _cold(db_path: Path, url: str) -> web.Sample:
    with web.serve(db_path) as base, httpx.Client(base_url=base, timeout=600) as client:
        return web.fetch(client, url)


def _busiest_line(base: str, compilation_url: str) -> tuple[str, int]:
    """The Python (file, line) the most IR lines of the compilation's first snapshot map to."""
    with httpx.Client(base_url=base, timeout=600) as client:
        first = client.get(compilation_url + "/s/0.json").json()
    counts = Counter((loc["file"], loc["line"]) for loc in first["locs"] if loc)
    return counts.most_common(1)[0][0]


def bench_map(workdir: Path, rounds: int = 3, warm_repeats: int = 5) -> dict:
    log, kernel = inputs.map_run_log()
    db_path = workdir / "map.db"
    run = _ingest(log, db_path)
    snapshots = sum(sum(c["snapshots"].values()) for c in run["compilations"])
    compilation = max(
        (c for c in run["compilations"] if c["kernel"] == kernel), key=lambda c: sum(c["snapshots"].values())
    )
    url = compilation["url"]
    with web.serve(db_path) as base:
        file, line = _busiest_line(base, url)
    line_url = f"{url}/map?file={httpx.QueryParams({'f': file})['f']}&line={line}"
    cold: dict[str, list[float]] = {"map": [], "map_line": [], "compilation": []}
    warm: list[float] = []
    for _ in range(rounds):
        cold["compilation"].append(_cold(db_path, url).ttfb)
        cold["map_line"].append(_cold(db_path, line_url).ttfb)
        with web.serve(db_path) as base, httpx.Client(base_url=base, timeout=600) as client:
            sample = web.fetch(client, url + "/map")
            assert sample.status == 200, sample
            cold["map"].append(sample.ttfb)
            warm += [web.fetch(client, url + "/map").ttfb for _ in range(warm_repeats)]
    medians = {name: statistics.median(values) for name, values in cold.items()}
    return {
        "log_bytes": log.stat().st_size,
        "run_snapshots": snapshots,
        "kernel": kernel,
        "compilation_snapshots": sum(compilation["snapshots"].values()),
        "line": f"{Path(file).name}:{line}",
        "cold_median": medians,
        "cold_all": cold,
        "warm_p50": web.percentile(warm, 0.5),
        "ratio_to_compilation_page": medians["map"] / medians["compilation"],
        "line_ratio_to_compilation_page": medians["map_line"] / medians["compilation"],
    }
