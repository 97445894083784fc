"""Issue 11's "Done means", checked mechanically on a capture made by
tests/fixtures/make_triton38_tutorial_captures.py (a log plus its manifest: every compile in log order,
the child's exit status and signal, its byte range in the log, and the names of every @jit function).

    PYTHONPATH=. python -m tests.fidelity_check --log LOG --manifest LOG.json --db sqlite:////tmp/x.db \
        [SOURCE.py ...]

ingests the log (with the sources) into a fresh database and checks that:
- every compile is exactly one compilation, of the right kernel; failed iff its child died or printed an
  error, with a reason; no compilation is named after a helper (a @jit function never compiled itself);
- a compile whose pass failed ends with a snapshot marked failed;
- MLIR, pipeliner-internal and LLVM snapshots equal the banners in the compile's bytes of the log;
- no LLVM snapshot body holds a pass-manager trace line;
- LLVM-stage snapshots of tcgen05 / wgmma / TMA kernels count MMA, TMA or barrier ops;
- the run, compilation, failed-snapshot and map pages and their .json twins answer 200.
tests/test_fidelity_check.py runs it on a committed capture; bench/NOTES.md has the figures on large ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field

from parsers.logs.llvm_dump import PREFIXES as LLVM_PREFIXES

MLIR_PREFIX = b"// -----// "
TRACE_LINE = re.compile(r"^(Running pass: |Running analysis: |Invalidating |Clearing all analysis results)")
# What a compile prints when it fails without dying: MLIR diagnostics, LLVM's fatal errors, a traceback.
ERROR_LINE = re.compile(rb"^(?:\S+:\d+:\d+: error: |<unknown>:0: error: |error: |LLVM ERROR: |Traceback )")
# Kernels whose lowering runs through inline PTX: their LLVM-stage snapshots must count hardware ops.
HW_KERNELS = {"tmem_example_kernel", "tmem_round_trip_kernel", "memcpy_1d_tma_kernel", "tma_copy_kernel",
              "matmul_kernel"}


@dataclass
class Report:
    log: str
    compiles: int = 0
    failed: int = 0
    banners: dict = field(default_factory=lambda: {"mlir": 0, "internal": 0, "llvm": 0})
    snapshots: dict = field(default_factory=lambda: {"mlir": 0, "internal": 0, "llvm": 0})
    damaged: int = 0
    llvm_bodies_checked: int = 0
    pages_checked: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def count_banners(log_path: str, start: int, end: int) -> tuple[dict[str, int], bool]:
    """Banner lines per kind in log[start:end], and whether that part prints an error."""
    counts = {"mlir": 0, "internal": 0, "llvm": 0}
    errored = False
    with open(log_path, "rb") as log:
        log.seek(start)
        remaining = end - start
        while remaining > 0:
            line = log.readline()
            if not line:
                break
            remaining -= len(line)
            if line.startswith(MLIR_PREFIX):
                if b" internal IR Dump " in line:
                    counts["internal"] += 1
                elif b" IR Dump " in line:
                    counts["mlir"] += 1
            elif line.startswith(LLVM_PREFIXES):
                counts["llvm"] += 1
            elif not errored and ERROR_LINE.match(line):
                errored = True
    return counts, errored


def check_run(client, run: dict, log_path: str, manifest: dict) -> Report:
    """Every check of the module docstring, on a run ingested from `log_path`; `client` gets pages."""
    report = Report(log=log_path, damaged=run["damaged"])
    compiles = manifest["compiles"]
    kernels = {c["kernel"] for c in compiles}
    helpers = set(manifest["jit_functions"]) - kernels
    got = run["compilations"]
    report.compiles = len(compiles)
    report.failed = sum(c["status"] == "failed" for c in got)
    if report.damaged:
        report.problems.append(f"{report.damaged} damaged blocks")
    for c in got:
        if c["kernel"] in helpers or c["kernel"] not in kernels:
            report.problems.append(f"compilation {c['id']} is named {c['kernel']!r}, not a compiled kernel")
    if len(got) != len(compiles):
        report.problems.append(f"{len(got)} compilations for {len(compiles)} compiles")
        return report
    for expected, compilation in zip(compiles, got):
        _check_compile(client, report, log_path, expected, compilation)
    _check_pages(client, report, run)
    return report


def _check_compile(client, report: Report, log_path: str, expected: dict, compilation: dict) -> None:
    label = f"{expected['label']} (#{compilation['id']})"
    banners, errored = count_banners(log_path, expected["log_start"], expected["log_end"])
    for kind in banners:
        report.banners[kind] += banners[kind]
        report.snapshots[kind] += compilation["snapshots"][kind]
    if compilation["kernel"] != expected["kernel"]:
        report.problems.append(f"{label}: kernel {compilation['kernel']!r}")
    if compilation["target"] not in (expected["target"], None) or (
            compilation["target"] is None and any(banners.values())):
        report.problems.append(f"{label}: target {compilation['target']!r}")
    should_fail = bool(expected["exit"] or expected["signal"] or errored)
    if (compilation["status"] == "failed") != should_fail:
        report.problems.append(f"{label}: status {compilation['status']}, child exit {expected['exit']} "
                               f"signal {expected['signal']}, error printed: {errored}")
    if compilation["status"] == "failed" and not compilation["status_reason"]:
        report.problems.append(f"{label}: failed without a reason")
    if compilation["snapshots"] != banners:
        report.problems.append(f"{label}: snapshots {compilation['snapshots']} != banners {banners}")
    page = client.get(compilation["url"] + ".json").json()
    snapshots = page["snapshots"]
    if compilation["failed_pass"] and not (snapshots and snapshots[-1]["failed"]):
        report.problems.append(f"{label}: pass {compilation['failed_pass']} failed but no failed snapshot")
    for snapshot in snapshots:
        if snapshot["kind"] != "llvm":
            continue
        report.llvm_bodies_checked += 1
        body = client.get(snapshot["raw_url"]).text
        trace = next((line for line in body.splitlines() if TRACE_LINE.match(line)), None)
        if trace:
            report.problems.append(f"{label}: snapshot {snapshot['index']} holds {trace!r}")
    if (expected["kernel"] in HW_KERNELS and expected["target"].startswith("cuda")
            and compilation["status"] == "ok"):
        lowered = [s for s in snapshots if s["stage"] in ("llvm-dialect", "llvm-ir")]
        if not any(s["ops"].get("mma") or s["ops"].get("tma") or s["ops"].get("barrier") for s in lowered):
            report.problems.append(f"{label}: no MMA/TMA/barrier op counted after lowering to LLVM")


def _check_pages(client, report: Report, run: dict) -> None:
    got = run["compilations"]
    largest = max(got, key=lambda c: sum(c["snapshots"].values()))
    urls = [run["url"], largest["url"], largest["url"] + "/map"]
    for compilation in got:
        if compilation["failed_pass"]:
            last = sum(compilation["snapshots"].values()) - 1
            urls.append(f"{compilation['url']}/s/{last}")
            break
    for url in urls:
        for path in (url, url + ".json"):
            report.pages_checked += 1
            status = client.get(path).status_code
            if status != 200:
                report.problems.append(f"{path}: {status}")


def main(argv: list[str] | None = None) -> int:
    from fastapi.testclient import TestClient

    from app.ingest.pipeline import Ingest
    from app.insight.page_data import run_summary
    from app.settings import Settings
    from app.store.db import Database
    from app.urls import Urls
    from app.web.app import create_app

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", required=True)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--db", required=True, help="a fresh database URL")
    parser.add_argument("sources", nargs="*")
    args = parser.parse_args(argv)
    with open(args.manifest) as handle:
        manifest = json.load(handle)
    database = Database(args.db)
    with database.session() as session:
        run = Ingest(session).ingest([args.log, *args.sources])
        session.commit()
        summary = run_summary(session, run, Urls())
    database.dispose()
    with TestClient(create_app(Settings(db_url=args.db, load_demo=False))) as client:
        report = check_run(client, summary, args.log, manifest)
    json.dump(report.as_dict(), sys.stdout, indent=1)
    print()
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
