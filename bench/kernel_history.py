"""Kernel history at team scale: `python -m bench.kernel_history --db postgresql+psycopg://... [--runs 10000]
[--kernels 20] [--checks 20]` (also the `history` stage of `python -m bench`, on IRLENS_BENCH_PG_URL).

Builds RUNS runs of KERNELS kernels each with bulk INSERTs (runs, compilations and kernel_points
rows, no log ingested): runs an hour apart, labelled with a Triton version that moves every few
hundred runs (registers and spills step with it), half of them listed, one in five profiled. Then,
against a real `irlens serve` on that database:
- /kernels/NAME.json and /kernels.json: p50/p95 over repeated requests, for a reader who sees every
  run (no tokens) and for an anonymous reader of a server requiring tokens (listed runs only), with
  the server's RSS after the first requests and after all of them (memory flat);
- CHECKS concurrent `irlens check --server` pushes of the two-version fixture to a 2-worker server:
  each one's exit status and wall time (its wait), and whether every run landed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import func, insert, select, text

from app.insight.kernel_points import VERSION as POINTS_VERSION
from app.insight.kernel_points import series_key
from app.store.db import Database
from app.store.generation import bump_history
from app.store.models import Compilation, KernelPoint, Run
from bench.inputs import REPO
from bench.server import serve

VERSIONS = ("3.4.0", "3.5.0", "3.5.1", "3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0", "3.10.0")
NAMES = ("matmul_kernel", "_attn_fwd", "_attn_bwd_dkdv", "_attn_bwd_dq", "add_kernel", "softmax_kernel",
         "layer_norm_fwd", "layer_norm_bwd", "rms_norm", "rotary_kernel", "grouped_matmul", "fp8_gemm",
         "swiglu_fwd", "cross_entropy_fwd", "cross_entropy_bwd", "moe_align", "fused_moe", "paged_attention",
         "decode_attention", "gelu_kernel")
FIXTURE = REPO / "tests" / "fixtures" / "kernel_history" / "triton31.tar.gz"
BATCH = 5000


def _rows(runs: int, kernels: int):
    start = datetime(2026, 1, 1, tzinfo=UTC)
    pk = 0
    for number in range(runs):
        run_id = f"{number:08x}" + "b" * 24
        version = VERSIONS[number * len(VERSIONS) // runs]
        version_index = VERSIONS.index(version)
        created = start + timedelta(hours=number)
        labels = {"triton": version, "branch": "main" if number % 3 else "pr", "commit": f"{number * 2654435761 % 2**32:08x}"}
        run = {"id": run_id, "title": f"nightly {number}", "created_at": created, "owner": ("alice", "bob")[number % 2],
               "listed": number % 2 == 0, "tags": ["nightly"], "input_bytes": 0, "damaged": 0, "stats": {},
               "labels": labels, "points_version": POINTS_VERSION}
        compilations, points = [], []
        for k in range(kernels):
            pk += 1
            name = NAMES[k % len(NAMES)] + ("" if k < len(NAMES) else f"_{k}")
            config = {"tile": "128x128x64", "num_warps": 4 + 4 * (k % 2), "num_stages": 3, "num_ctas": 1}
            registers = 96 + 8 * k % 160 + 4 * version_index * (k % 3)
            spills = 0 if registers < 240 or k % 4 else 16 * (version_index + 1)
            compilations.append({"pk": pk, "run_id": run_id, "ordinal": k + 1, "kernel": name, "origin": "cache",
                                 "target": "cuda:90", "triton_version": version, "status": "ok", "counts": {},
                                 "changed": 0})
            points.append({"compilation_pk": pk, "run_id": run_id, "created_at": created, "kernel": name,
                           "target": "cuda:90", "series": series_key(config), "config": config,
                           "triton_version": version, "status": "ok", "registers": min(registers, 255),
                           "spill_bytes": spills, "shared_bytes": 65536, "occupancy": 8 if registers > 128 else 16,
                           "time_ns": (10_000 + 100 * k + 300 * version_index) if number % 5 == 0 else None,
                           "autotune_ms": None, "picked": None, "passes_changed": 40 + k,
                           "ir_lines": {"ttgir": 200 + k, "ptx": 2000 + 10 * k, "sass": 3000 + 10 * k},
                           "ops": {"mma": 2, "barrier": 1} if k % 2 else {"layout": 1}})
        yield run, compilations, points


def build(db: Database, runs: int, kernels: int) -> dict:
    started = time.perf_counter()
    batches: dict[str, list] = {"runs": [], "compilations": [], "points": []}
    tables = {"runs": Run.__table__, "compilations": Compilation.__table__, "points": KernelPoint.__table__}
    with db.engine.begin() as connection:
        def flush() -> None:
            for key in ("runs", "compilations", "points"):  # parents first
                if batches[key]:
                    connection.execute(insert(tables[key]), batches[key])
                    batches[key] = []

        for run, compilations, points in _rows(runs, kernels):
            batches["runs"].append(run)
            batches["compilations"] += compilations
            batches["points"] += points
            if len(batches["points"]) >= BATCH:
                flush()
        flush()
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT setval(pg_get_serial_sequence('compilations', 'pk'), "
                                    "(SELECT max(pk) FROM compilations))"))
    if db.engine.dialect.name == "postgresql":  # what autovacuum does after a bulk load (index-only scans)
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE"))
    with db.session() as session:
        counted = {"runs": session.scalar(select(func.count()).select_from(Run)),
                   "points": session.scalar(select(func.count()).select_from(KernelPoint))}
    return {**counted, "build_s": round(time.perf_counter() - started, 1)}


def _server_rss(port: str) -> int:
    """RSS in bytes of the `irlens serve` processes listening on `port` (the master and its workers)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"serve" not in command and not any(b"multiprocessing" in part for part in command):
                continue
            if port.encode() not in command and not _child_of_port(pid, port):
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _child_of_port(pid: str, port: str) -> bool:
    try:
        parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        return port.encode() in Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
    except (OSError, IndexError):
        return False


def _percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1), "n": len(ordered)}


def measure_pages(db_url: str, workdir: Path, kernels: int, rounds: int, env: dict | None = None) -> dict:
    names = [NAMES[k % len(NAMES)] + ("" if k < len(NAMES) else f"_{k}") for k in range(kernels)]
    out: dict = {}
    with serve(db_url, workdir / f"server-{len(os.listdir(workdir))}", env=env) as (url, _log):
        port = url.rsplit(":", 1)[1].split("/")[0]
        with httpx.Client(timeout=60) as client:
            samples: dict[str, list[float]] = {"/kernels/NAME.json": [], "/kernels.json": [],
                                               "/kernels.json after a change": []}
            sizes: dict[str, int] = {}
            rss = []
            for round_number in range(rounds):
                for name in names:
                    began = time.perf_counter()
                    response = client.get(f"{url}/kernels/{name}.json")
                    samples["/kernels/NAME.json"].append(time.perf_counter() - began)
                    assert response.status_code == 200, response.text[:300]
                    sizes["/kernels/NAME.json"] = len(response.content)
                # The list is kept per worker until the next change: what the first reader after a change
                # waits (the generation moved, as an upload moves it), then what the next readers wait.
                with Database(db_url).session() as session:
                    bump_history(session)
                    session.commit()
                for path in ("/kernels.json after a change",) + ("/kernels.json",) * 4:
                    began = time.perf_counter()
                    response = client.get(f"{url}/kernels.json")
                    samples[path].append(time.perf_counter() - began)
                    assert response.status_code == 200 and len(response.json()["kernels"]) == kernels
                    sizes[path] = len(response.content)
                if round_number in (0, rounds - 1):
                    rss.append(_server_rss(port))
            sample = client.get(f"{url}/kernels/{names[0]}.json").json()
    for path, values in samples.items():
        out[path] = {**_percentiles(values), "bytes": sizes[path]}
    out["points_shown"] = sample["shown_points"]
    out["points_total"] = sample["total_points"]
    out["flags_shown"] = sum(len(series["flags"]) for series in sample["series"])
    out["rss_after_first_round_mib"] = round(rss[0] / 2**20, 1)
    out["rss_after_last_round_mib"] = round(rss[-1] / 2**20, 1)
    return out


def measure_checks(db_url: str, workdir: Path, checks: int) -> dict:
    """CHECKS concurrent `irlens check --server` pushes to a 2-worker server requiring tokens."""
    made = subprocess.run([sys.executable, "-m", "app.cli", "token", "create", "ci", "--db", db_url],
                          capture_output=True, text=True, check=True, cwd=REPO)
    token = made.stdout.strip().splitlines()[-1]
    with Database(db_url).session() as session:
        before = session.scalar(select(func.count()).select_from(Run))
    with serve(db_url, workdir / "checks", workers=2, env={"IRLENS_REQUIRE_TOKEN": "true"}) as (url, _log):
        results: list[dict] = [{} for _ in range(checks)]

        def push(n: int) -> None:  # one thread per check, so each one's end is seen when it comes
            launched = time.perf_counter()
            process = subprocess.run(
                [sys.executable, "-m", "app.cli", "check", "--server", url, "--token", token, "--json",
                 "--label", f"ci=job{n}", "--label", "branch=pr", str(FIXTURE)],
                capture_output=True, text=True, cwd=REPO, timeout=1800, check=False)
            results[n] = {"exit": process.returncode, "seconds": round(time.perf_counter() - launched, 2),
                          "run": json.loads(process.stdout)["run"] if process.returncode in (0, 1) else None,
                          "error": process.stderr.strip()[-300:] if process.returncode not in (0, 1) else None}

        began = time.perf_counter()
        threads = [threading.Thread(target=push, args=(n,)) for n in range(checks)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
    with Database(db_url).session() as session:
        landed = session.scalar(select(func.count()).select_from(Run)) - before
        points = session.scalar(select(func.count()).select_from(KernelPoint).where(
            KernelPoint.run_id.in_([r["run"] for r in results if r["run"]])))
    waits = sorted(r["seconds"] for r in results)
    return {"checks": checks, "answered": sum(r["run"] is not None for r in results), "runs_landed": landed,
            "points_of_those_runs": points, "exit_codes": sorted({r["exit"] for r in results}),
            "wall_s": round(wall, 1), "waits_s": waits, "median_wait_s": statistics.median(waits),
            "errors": [r["error"] for r in results if r["error"]][:3]}


def bench(db_url: str, runs: int, kernels: int, checks: int, rounds: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="irlens-bench-history-"))
    db = Database(db_url)
    try:
        with db.session() as session:
            present = session.scalar(select(func.count()).select_from(KernelPoint))
        built = {"reused": present} if present else build(db, runs, kernels)
    finally:
        db.dispose()
    with Database(db_url).session() as session:
        counted = session.scalar(select(func.count()).select_from(Run))
    results = {"database": db_url.split("://")[0], "built": built, "runs": counted}
    print(f"bench: history pages over {runs} runs x {kernels} kernels ...", file=sys.stderr, flush=True)
    results["pages_all_runs"] = measure_pages(db_url, workdir, kernels, rounds)
    results["pages_listed_only"] = measure_pages(db_url, workdir, kernels, rounds, env={"IRLENS_REQUIRE_TOKEN": "true"})
    if checks:
        print(f"bench: {checks} concurrent irlens check pushes to a 2-worker server ...", file=sys.stderr, flush=True)
        results["checks"] = measure_checks(db_url, workdir, checks)
    return results


def bench_on_postgres(workdir: Path, runs: int, checks: int, rounds: int, kernels: int = 20) -> dict:
    """On IRLENS_BENCH_PG_URL (an empty database), else on a throwaway server from .ci/postgres.sh."""
    url = os.environ.get("IRLENS_BENCH_PG_URL")
    if url:
        return bench(url, runs, kernels, checks, rounds)
    env = {**os.environ, "PG_DIR": str(workdir / "postgres"), "PG_DB": "irlens_bench_history"}
    script = str(REPO / ".ci" / "postgres.sh")
    started = subprocess.run(["bash", script, "start"], capture_output=True, text=True, env=env, timeout=300, check=False)
    if started.returncode != 0:
        raise RuntimeError(f".ci/postgres.sh start failed: {started.stderr.strip()[-300:]}")
    try:
        return bench(started.stdout.strip().splitlines()[-1], runs, kernels, checks, rounds)
    finally:
        subprocess.run(["bash", script, "stop"], capture_output=True, env=env, timeout=300, check=False)


def table_rows(results: dict | None) -> list[tuple[str, str, str, str]]:
    if not results:
        return []
    rows = []
    for key, who in (("pages_all_runs", "every run"), ("pages_listed_only", "listed runs only")):
        pages = results.get(key)
        if not pages:
            continue
        for path, target in (("/kernels/NAME.json", "p95 ≤ 100 ms"), ("/kernels.json", "p95 ≤ 200 ms"),
                             ("/kernels.json after a change", "")):
            entry = pages[path]
            rows.append((f"{path} ({results['database']}, {results['runs']} runs, reader sees {who})",
                         f"p50 {entry['p50_ms']} ms, p95 {entry['p95_ms']} ms ({entry['bytes'] / 1e3:.0f} kB)", "", target))
        rows.append((f"history server RSS, first → last round ({who})",
                     f"{pages['rss_after_first_round_mib']} → {pages['rss_after_last_round_mib']} MiB", "", "flat"))
    checks = results.get("checks")
    if checks:
        waits = checks["waits_s"]
        rows.append((f"{checks['checks']} concurrent irlens check pushes, 2 workers: answered / landed",
                     (f"{checks['answered']} / {checks['runs_landed']}; waits {waits[0]}-{waits[-1]} s "
                      f"(median {checks['median_wait_s']} s)"), "", "all land"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=os.environ.get("IRLENS_BENCH_PG_URL"), help="database URL (PostgreSQL)")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--kernels", type=int, default=20)
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "kernel-history.json"))
    args = parser.parse_args()
    if not args.db:
        parser.error("--db URL (or IRLENS_BENCH_PG_URL): a PostgreSQL database, e.g. from .ci/postgres.sh start")
    results = bench(args.db, args.runs, args.kernels, args.checks, args.rounds)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    for row in table_rows(results):
        print(" | ".join(row))


if __name__ == "__main__":
    main()
