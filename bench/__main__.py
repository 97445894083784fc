"""Run every irlens benchmark and print one table: `.venv/bin/python -m bench [--quick] [--only ...]`.

Inputs come from ../shared/corpus (see bench/inputs.py) and are cached in $TMPDIR/irlens-bench while
the corpus is unchanged. Each ingest figure is measured next to a `grep -c` baseline over the same
file in the same run, and shown as a ratio to it. Results also go to bench/results/{full,quick}.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench import bigrun, default_ingest, inputs, page_visits, scan_workers, web
from bench import ingest as ingest_bench
from bench import inspector as inspector_bench
from bench import kernel_history as history_bench
from bench import peers as peers_bench
from bench import source_map as map_bench

MB = 1e6
# captures: only the small and tiny captures of the storage stage (which runs them after the whole corpus)
# default: the default ingest against --no-compact per capture, and the compaction candidates' curve
# visits: a first visit in Chromium to every page type on the largest real captures
STAGES = ("ingest", "default", "workers", "peers", "storage", "captures", "pages", "map", "bigrun", "throughput",
          "browser", "inspector", "history", "visits")


def machine() -> dict:
    import zstandard

    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "zstd": ".".join(map(str, zstandard.ZSTD_VERSION)),
        "load_before": os.getloadavg()[0],
    }


def run(args: argparse.Namespace) -> dict:
    mode = "quick" if args.quick else "full"
    if args.only:  # a partial run keeps the whole run's results: bench/results/full-visits.json
        mode += "-" + "-".join(sorted(set(args.only)))
    results: dict = {"machine": machine(), "mode": mode, "started": time.time()}
    workdir = Path(tempfile.mkdtemp(prefix="irlens-bench-run-"))
    stages = set(args.only or STAGES)
    # 356 MiB = 373 MB: the size of the log issue 16's ingest target was measured on.
    sizes = (200 * inputs.MiB, 356 * inputs.MiB, 400 * inputs.MiB) if args.quick else (356 * inputs.MiB, inputs.GiB, 2 * inputs.GiB)
    repeats = 1 if args.quick else args.repeats

    if "ingest" in stages:
        results["ingest"] = []
        for size in sizes:
            log = inputs.big_log(size)
            print(f"bench: ingest {log.stat().st_size / MB:.0f} MB ...", file=sys.stderr, flush=True)
            results["ingest"].append(ingest_bench.bench_ingest(log, workdir, repeats=repeats))

    if "default" in stages:
        results["default"] = default_ingest.bench_default(workdir, repeats=2 if args.quick else 3, quick=args.quick)

    if "workers" in stages:
        log = inputs.big_log(356 * inputs.MiB)
        print(f"bench: the scan of {log.stat().st_size / MB:.0f} MB in 1, 2 and 4 helpers ...", file=sys.stderr, flush=True)
        ingest_bench.warm(log)
        grep_seconds, _ = ingest_bench.grep_baseline(log)
        runs = [scan_workers.scan(log, workers) for workers in (1, 2, 4)]
        results["workers"] = {"bytes": log.stat().st_size, "grep_seconds": grep_seconds,
                              "same_records": len({run["digest"] for run in runs}) == 1,
                              "runs": [{k: v for k, v in run.items() if k != "digest"} for run in runs]}

    if "peers" in stages:
        print("bench: irlens vs tritonparse on six kernels ...", file=sys.stderr, flush=True)
        results["peers"] = peers_bench.bench_peers(workdir, repeats=3 if args.quick else 7)

    corpus_db = workdir / "corpus.db"
    if stages & {"storage", "pages", "throughput", "browser"}:
        print("bench: corpus into one database ...", file=sys.stderr, flush=True)
        storage = ingest_bench.bench_storage(workdir)
        storage.pop("db_path", None)
        results["storage"] = storage
    if stages & {"storage", "captures"}:
        low, high = ingest_bench.SMALL_CAPTURE_BYTES
        floor = ingest_bench.empty_db_bytes(workdir)
        for key, archives, name in (
            ("storage_small", ingest_bench.archives_by_size(low, high), "small.db"),
            ("storage_tiny", ingest_bench.archives_by_size(0, low), "tiny.db"),
        ):
            print(f"bench: {key}: {len(archives)} captures into one database ...", file=sys.stderr, flush=True)
            small = ingest_bench.bench_storage(workdir, archives=archives, name=name)
            small.pop("db_path", None)
            small["empty_db_bytes"] = floor
            results[key] = small

    if stages & {"pages", "throughput", "browser"}:
        targets = web.pick_targets(corpus_db)
        results["targets"] = targets.__dict__
    if "pages" in stages:
        print("bench: page latency ...", file=sys.stderr, flush=True)
        results["pages"] = web.measure_latency(corpus_db, targets, rounds=1 if args.quick else 3,
                                               warm_repeats=3 if args.quick else 10)
        if targets.compares:
            results["compare"] = web.measure_compare(corpus_db, targets, rounds=1 if args.quick else 3,
                                                     warm_repeats=3 if args.quick else 10)
    if "map" in stages:
        print("bench: map page on a run of ~8,000 snapshots ...", file=sys.stderr, flush=True)
        results["map"] = map_bench.bench_map(workdir, rounds=1 if args.quick else 3, warm_repeats=3 if args.quick else 5)
    if "bigrun" in stages:
        print("bench: run page of a 1 GB capture (hundreds of compilations, thousands of warnings) ...",
              file=sys.stderr, flush=True)
        results["bigrun"] = bigrun.bench_bigrun(workdir, rounds=1 if args.quick else 3, warm_repeats=3 if args.quick else 5)
    if "throughput" in stages:
        print("bench: throughput ...", file=sys.stderr, flush=True)
        seconds = 5 if args.quick else 10
        results["throughput"] = {
            "snapshot ~10k lines": web.measure_throughput(corpus_db, targets.ten_k[0], seconds=seconds),
            "snapshot small": web.measure_throughput(corpus_db, targets.warmup, seconds=seconds),
            "diff ~10k lines": web.measure_throughput(corpus_db, targets.diffs[0], seconds=seconds),
            "snapshot ~10k lines, revalidated (304)": web.measure_throughput(
                corpus_db, targets.ten_k[0], seconds=seconds, revalidate=True
            ),
        }
    if "browser" in stages:
        print("bench: browser ...", file=sys.stderr, flush=True)
        try:
            results["browser"] = web.measure_browser(
                corpus_db, targets.largest, repeats=1 if args.quick else 3, first_visits=1 if args.quick else 5
            )
        except Exception as error:  # noqa: BLE001 - a browser problem should not lose the other figures
            results["browser"] = {"skipped": f"failed: {type(error).__name__}: {str(error)[:200]}"}
    if "inspector" in stages:
        print("bench: layout inspector in Chromium ...", file=sys.stderr, flush=True)
        try:
            results["inspector"] = inspector_bench.measure_inspector(repeats=3 if args.quick else 5)
        except Exception as error:  # noqa: BLE001 - a browser problem should not lose the other figures
            results["inspector"] = {"browser": {"skipped": f"failed: {type(error).__name__}: {str(error)[:200]}"}}
    if "history" in stages:
        print("bench: kernel history on PostgreSQL ...", file=sys.stderr, flush=True)
        try:
            results["history"] = history_bench.bench_on_postgres(workdir, runs=2_000 if args.quick else 10_000,
                                                                 checks=20, rounds=3 if args.quick else 6)
        except Exception as error:  # noqa: BLE001 - no PostgreSQL here should not lose the other figures
            results["history"] = {"skipped": f"failed: {type(error).__name__}: {str(error)[:300]}"}
    if "visits" in stages:
        try:
            results["visits"] = page_visits.measure_visits(workdir, visits=1 if args.quick else 3)
        except Exception as error:  # noqa: BLE001 - a browser problem should not lose the other figures
            results["visits"] = {"skipped": f"failed: {type(error).__name__}: {str(error)[:200]}"}
    results["machine"]["load_after"] = os.getloadavg()[0]
    results["finished"] = time.time()
    if args.keep:
        results["workdir"] = str(workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def split_tables(tables: dict[str, int], raw: int, largest: int = 6) -> list[tuple[str, str]]:
    """The database's pages by table (rows) and index, largest first, as MB and a share of the raw
    input; the rest summed."""
    ordered = sorted(tables.items(), key=lambda item: -item[1])
    shown = ordered[:largest]
    rest = sum(size for _, size in ordered[largest:])
    label = {True: "index", False: "table"}
    out = [(f"{label[name.startswith(('ix_', 'sqlite_autoindex'))]} {name}",
            f"{size / MB:.2f} MB ({size / raw * 100:.2f}%)") for name, size in shown]
    if rest:
        out.append((f"{len(ordered) - largest} other tables and indexes", f"{rest / MB:.2f} MB ({rest / raw * 100:.2f}%)"))
    return out


def table(results: dict) -> str:
    """The results as a Markdown table (docs/performance.md holds a copy)."""
    rows: list[tuple[str, str, str, str]] = []  # figure, value, vs grep, target
    for entry in results.get("ingest", []):
        size = entry["bytes"] / MB
        grep = entry["grep_seconds"]
        rows.append((f"grep -c baseline, {size:.0f} MB log", _fmt_s(grep), "1×", ""))
        rows.append((
            f"ingest {size:.0f} MB (SQLite), wall", _fmt_s(entry["seconds"]),
            f"{entry['ratio_to_grep']:.1f}×", "≥ 350 MB/s",
        ))
        rows.append((f"ingest {size:.0f} MB, throughput", f"{entry['mb_per_s']:.0f} MB/s", "", "≥ 350 MB/s"))
        rows.append((f"ingest {size:.0f} MB, CPU (all threads, op-index helper)", _fmt_s(entry["cpu_seconds"]), "", ""))
        spread = entry.get("all_max_rss") or [entry["max_rss"]]
        rss = f"{entry['max_rss'] / 2**20:.0f} MiB"
        if len(spread) > 1:
            rss += f" (runs {min(spread) / 2**20:.0f}-{max(spread) / 2**20:.0f})"
        rows.append((f"ingest {size:.0f} MB, peak RSS (median)", rss, "", "≤ 200 MB, flat"))
    workers = results.get("workers")
    if workers:
        size, grep = workers["bytes"] / MB, workers["grep_seconds"]
        for run in workers["runs"]:
            cpu = sum(run["helpers"]) + run["own"]
            rows.append((
                (f"log scan alone, {size:.0f} MB, {run['workers']} helper(s): wall; CPU (per MB); slowest helper "
                f"(the wall with a core each){'' if workers['same_records'] else ' RECORDS DIFFER'}"),
                f"{_fmt_s(run['wall'])}; {_fmt_s(cpu)} ({cpu / size * 1000:.2f} ms/MB); {_fmt_s(max(run['helpers']))}",
                f"{run['wall'] / grep:.1f}×", "",
            ))
    rows += default_ingest.table_rows(results.get("default"))
    rows += peers_bench.table_rows(results.get("peers"))
    rows += history_bench.table_rows(results.get("history") if "skipped" not in (results.get("history") or {}) else None)
    low, high = (size / MB for size in ingest_bench.SMALL_CAPTURE_BYTES)
    for key, what in (
        ("storage", "whole corpus"),
        ("storage_small", f"small captures, {low:.0f}-{high:.0f} MB raw each"),
        ("storage_tiny", f"tiny captures, under {low:.0f} MB raw each"),
    ):
        storage = results.get(key)
        if not storage:
            continue
        shape = f"{storage['archives']} archives, {storage['raw_bytes'] / MB:.1f} MB"
        if key != "storage":
            shape += ": " + ", ".join(storage["archive_names"])
        rows.append((
            f"stored / raw, {what} ({shape}; one run each, after ingest's compaction and the map indexes)",
            # The tiny ones are shown for the schema's floor, not held to the target.
            f"{storage['share'] * 100:.2f}% ({storage['db_bytes'] / MB:.2f} MB)", "", "" if key == "storage_tiny" else "≤ 2%",
        ))
        if "compacted_bytes" in storage:
            rows.append((
                "  right after `irlens ingest` (it compacts by default), without the map pages' line indexes",
                f"{storage['compacted_share'] * 100:.2f}% ({storage['compacted_bytes'] / MB:.2f} MB)", "",
                "" if key == "storage_tiny" else "≤ 2%",
            ))
        if "compact_seconds" in storage:
            rows.append((
                "  its cost: the ingests' compaction, wall; largest ingest's peak RSS (with --no-compact)",
                (f"{_fmt_s(storage['compact_seconds'])}; {storage['max_rss'] / 2**20:.0f} MiB "
                f"({storage['max_rss_no_compact'] / 2**20:.0f} MiB)"), "", "",
            ))
        if "ingested_bytes" in storage:
            rows.append((
                "  right after `irlens ingest --no-compact`",
                f"{storage['ingested_share'] * 100:.2f}% ({storage['ingested_bytes'] / MB:.2f} MB)", "", "",
            ))
        if storage.get("cold_read_p50"):
            before = storage["cold_read_p50_before"]
            rows.append((
                "  cold read of one text per pack, p50 / max (after / right after ingest)",
                (f"{storage['cold_read_p50'] * 1e3:.2f} / {storage['cold_read_max'] * 1e3:.2f} ms"
                 f" ({before * 1e3:.2f} / {storage['cold_read_max_before'] * 1e3:.2f} ms)"),
                f"{storage['cold_read_p50'] / before:.2f}×", "",
            ))
        rows.append(("  of which blob data", f"{storage['blob_data_bytes'] / MB:.2f} MB", "", ""))
        if storage.get("empty_db_bytes"):
            floor = storage["empty_db_bytes"]
            rows.append((
                "  of which the empty schema's floor (same for any capture)",
                (f"{floor / MB:.2f} MB ({floor / storage['raw_bytes'] * 100:.2f}%;"
                 f" {(storage['db_bytes'] - floor) / storage['raw_bytes'] * 100:.2f}% without it)"), "", "",
            ))
        for name, size in split_tables(storage.get("tables", {}), storage["raw_bytes"]):
            rows.append((f"  {name}", size, "", ""))
    targets = results.get("targets", {})
    for page in results.get("pages", []):
        label = page["label"]
        if label.startswith("snapshot ~10k"):
            lines = f"{min(targets['ten_k_lines'])}-{max(targets['ten_k_lines'])} lines"
            target_cold, target_warm = "≤ 400 ms", "≤ 50 ms"
        elif label.startswith("snapshot largest"):
            lines = f"{targets['largest_lines']} lines"
            target_cold = target_warm = ""
        else:
            lines = ", ".join(f"{a}/{b}" for a, b in targets["diff_lines"][:3]) + " … lines"
            target_cold = target_warm = "≤ 150 ms"
        for phase, target in (("cold", target_cold), ("warm", target_warm)):
            stats = page[phase]
            rows.append((
                f"{label} ({lines}), {phase}, server time p50 / p95",
                f"{_fmt_s(stats['ttfb_p50'])} / {_fmt_s(stats['ttfb_p95'])}", "",
                target,
            ))
        cold = page["cold"]
        if "cpu_p50" in cold:
            rows.append((f"{label}, cold, server CPU time p50 / p95",
                         f"{_fmt_s(cold['cpu_p50'])} / {_fmt_s(cold['cpu_p95'])}", "", ""))
    source_map = results.get("map")
    if source_map:
        shape = (f"{source_map['kernel']}, {source_map['compilation_snapshots']} snapshots, in a run of "
                 f"{source_map['run_snapshots']:,}")
        baseline = _fmt_s(source_map["cold_median"]["compilation"])
        rows.append((f"compilation page ({shape}), cold, server time (median): the map's baseline", baseline, "", ""))
        for key, label, ratio in (
            ("map", "map page, same compilation", "ratio_to_compilation_page"),
            ("map_line", f"map page of {source_map['line']}", "line_ratio_to_compilation_page"),
        ):
            value = f"{_fmt_s(source_map['cold_median'][key])} ({source_map[ratio]:.2f}× baseline)"
            rows.append((f"{label}, cold, server time (median)", value, "", "≤ 300 ms"))
        rows.append(("map page, warm, server time p50", _fmt_s(source_map["warm_p50"]), "", ""))
    rows += bigrun.table_rows(results.get("bigrun"), _fmt_s)
    compare = {page["label"]: page for page in results.get("compare", [])}
    if len(compare) == 2:
        baseline, page = compare["compilation page ~80 passes"], compare["compare ~80 passes"]
        passes = ", ".join(f"{a}/{b}" for a, b in targets["compare_passes"][:3]) + " … passes"
        for phase, target in (("cold", "≤ 300 ms"), ("warm", "")):
            base_stats, stats = baseline[phase], page[phase]
            span = f"{min(targets['compilation_passes'])}-{max(targets['compilation_passes'])} passes"
            rows.append((
                f"compilation page ({span}), {phase}, server time p50 / p95",
                f"{_fmt_s(base_stats['ttfb_p50'])} / {_fmt_s(base_stats['ttfb_p95'])}", "1× (baseline)", "",
            ))
            rows.append((
                f"compare two compilations ({passes}), {phase}, server time p50 / p95",
                f"{_fmt_s(stats['ttfb_p50'])} / {_fmt_s(stats['ttfb_p95'])}",
                f"{stats['ttfb_p50'] / base_stats['ttfb_p50']:.1f}× compilation page", target,
            ))
        base_cold, cold = baseline["cold"], page["cold"]
        if "cpu_p50" in cold and "cpu_p50" in base_cold:
            rows.append(("compilation page, cold, server CPU time p50 / p95",
                         f"{_fmt_s(base_cold['cpu_p50'])} / {_fmt_s(base_cold['cpu_p95'])}", "1× (baseline)", ""))
            rows.append(("compare two compilations, cold, server CPU time p50 / p95",
                         f"{_fmt_s(cold['cpu_p50'])} / {_fmt_s(cold['cpu_p95'])}",
                         f"{cold['cpu_p50'] / base_cold['cpu_p50']:.1f}× compilation page", "≤ 300 ms"))
    for name, entry in results.get("throughput", {}).items():
        rows.append((f"cached {name}, 32 clients ({entry['tool']})",
                     f"{entry['rps']:.0f} req/s, {entry['errors']} errors", "", "≥ 500 req/s, 0 errors"))
    browser = results.get("browser")
    if browser and "skipped" not in browser:
        label = f"browser: largest snapshot ({targets.get('largest_lines')} lines) visible + scrollable, first visit (median)"
        low, high = browser.get("cold_scrollable_range_s", [browser["cold_scrollable_s"]] * 2)
        spread = f" ({_fmt_s(low)}-{_fmt_s(high)}, {browser.get('first_visits', 1)} fresh servers)" if high > low else ""
        rows.append((label, _fmt_s(browser["cold_scrollable_s"]) + spread, "", "≤ 1 s"))
        rows.append(("browser: same, server cache warm (p50)", _fmt_s(browser["warm_scrollable_p50_s"]), "",
                     "≤ 1 s"))
    elif browser:
        rows.append(("browser", browser["skipped"], "", ""))
    rows += inspector_bench.table_rows(results.get("inspector", {}))
    rows += page_visits.table_rows(results.get("visits"))
    out = ["| figure | value | vs grep | target |", "|---|---|---|---|"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    m = results["machine"]
    out.append("")
    out.append(
        f"Machine: {m['cpus']} cores ({m['cpu']}), Python {m['python']}, SQLite {m['sqlite']}, "
        f"zstd {m['zstd']}; load average {m['load_before']:.1f} before, {m['load_after']:.1f} after."
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200, 356 and 400 MiB logs, fewer samples")
    parser.add_argument("--only", action="append", choices=STAGES, help="run only this stage (repeatable)")
    parser.add_argument("--repeats", type=int, default=3, help="ingests per log size (the fastest counts)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON, not a table")
    parser.add_argument("--keep", action="store_true", help="keep the databases the run made (path in the JSON)")
    args = parser.parse_args(argv)
    results = run(args)
    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / f"{results['mode']}.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(json.dumps(results, indent=1, default=str) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
