"""The default `irlens ingest` against `--no-compact`, capture by capture, in one run (issue 32).

`python -m bench --only default` (a stage of the full bench). For each capture, fresh SQLite
databases, alternately, `repeats` times: `irlens ingest --no-compact` (reading and storing) and the
default `irlens ingest` (which also compacts before it returns), whole processes, imports included.
Reported per capture: the median of the paired time ratios (target ≤ 1.3×), and the share of the
input's bytes that the default leaves on disk (the SQLite file as the command left it; targets ≤ 2.5%
for the six small corpus captures, ≤ 2% for big logs and the real GPU capture).

Captures: the six small corpus archives (bench/ingest.py `archives_by_size`), the real GPU autotune
capture (`inputs.gpu_captures()`: IRLENS_BENCH_GPU_CAPTURE, else /work/captures/gpu_autotune_big;
the stage says when it is absent) and the 373 MB bench log. Then the compaction candidates' curve
(bench/compaction.py) over the `--no-compact` databases of the last round.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from bench import compaction, inputs
from bench.ingest import SMALL_CAPTURE_BYTES, archives_by_size, fresh_db, ingest, warm

MB = 1e6
TIME_TARGET = 1.3
SMALL_TARGET, BIG_TARGET = 0.025, 0.02


def _stored(db: Path) -> int:
    return sum(Path(f"{db}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{db}{suffix}").exists())


def captures() -> tuple[list[tuple[str, list[Path], int, float]], str | None]:
    """((name, paths, input bytes, stored-share target) ..., why the GPU capture is missing or None)."""
    out = [(archive.name.removesuffix(".tar.xz"), [archive], inputs.archive_raw_bytes([archive]), SMALL_TARGET)
           for archive in archives_by_size(*SMALL_CAPTURE_BYTES)]
    gpu, missing = inputs.gpu_captures()
    for folder in gpu:
        paths = [folder / "dump.log", *([folder / "cache"] if (folder / "cache").is_dir() else [])]
        size = sum(p.stat().st_size for path in paths for p in ([path] if path.is_file() else path.rglob("*"))
                   if p.is_file())
        out.append((f"GPU: {folder.name}", paths, size, BIG_TARGET))
    log = inputs.big_log(356 * inputs.MiB)
    out.append((f"bench log {log.stat().st_size / MB:.0f} MB", [log], log.stat().st_size, BIG_TARGET))
    return out, missing


def bench_default(workdir: Path, repeats: int = 3, curve: bool = True, quick: bool = False) -> dict:
    found, missing = captures()
    rows, plain_dbs = [], {}
    for index, (name, paths, size, target) in enumerate(found):
        print(f"bench: default ingest vs --no-compact: {name} ...", file=sys.stderr, flush=True)
        for path in paths:
            if path.is_file():
                warm(path)
        plain_times, default_times, ratios, stored, stored_plain, compact_seconds, rss = [], [], [], [], [], [], []
        rss_plain = []
        for attempt in range(repeats):
            plain_db = fresh_db(workdir / f"default-{index}-plain.db")
            default_db = fresh_db(workdir / f"default-{index}-default.db")
            # alternate which goes first: a burst of load then hits both sides alike over the rounds
            order = [("plain", plain_db), ("default", default_db)][:: 1 if attempt % 2 == 0 else -1]
            done = {}
            for mode, db in order:
                done[mode] = ingest(paths, db, ["--no-compact"] if mode == "plain" else ["--json"])
            plain_times.append(done["plain"].seconds)
            default_times.append(done["default"].seconds)
            ratios.append(done["default"].seconds / done["plain"].seconds)
            stored.append(_stored(default_db))
            stored_plain.append(_stored(plain_db))
            compaction_done = json.loads(done["default"].stdout)["compaction"] or {}
            compact_seconds.append(compaction_done.get("seconds", 0.0))
            rss.append(done["default"].max_rss)
            rss_plain.append(done["plain"].max_rss)
            fresh_db(default_db)
        plain_dbs[name] = plain_db
        ratio = statistics.median(ratios)
        share = statistics.median(stored) / size
        rows.append({
            "name": name, "input_bytes": size, "repeats": repeats,
            "no_compact_seconds": statistics.median(plain_times), "default_seconds": statistics.median(default_times),
            "all_ratios": ratios, "ratio": ratio, "ratio_target": TIME_TARGET, "ratio_met": max(ratios) <= TIME_TARGET,
            "compaction_seconds": statistics.median(compact_seconds),
            "stored_bytes": int(statistics.median(stored)), "stored_share": share,
            "stored_no_compact_share": statistics.median(stored_plain) / size,
            "share_target": target, "share_met": share <= target, "max_rss": int(statistics.median(rss)),
            "max_rss_no_compact": int(statistics.median(rss_plain)),
        })
    result = {"captures": rows, "gpu_capture_missing": missing}
    small = [(paths, size) for _, paths, size, target in found if target == SMALL_TARGET]
    if small:  # as round 3's target was read: the six, one default ingest each, into one database
        together = fresh_db(workdir / "default-small-together.db")
        for paths, _ in small:
            ingest(paths, together, [])
        result["small_together_share"] = _stored(together) / sum(size for _, size in small)
        fresh_db(together)
    if curve:
        result["curve"] = _curve(plain_dbs, found, quick)
    for db in plain_dbs.values():
        fresh_db(db)
    return result


def _curve(plain_dbs: dict[str, Path], found: list, quick: bool) -> list[dict]:
    """The candidates over the small captures together, the GPU capture(s) and the bench log."""
    sizes = {name: size for name, _, size, _ in found}
    small = [name for name, _, _, target in found if target == SMALL_TARGET]
    groups = [("six small captures", small)] + [(name, [name]) for name in plain_dbs if name not in small]
    names = compaction.QUICK_CANDIDATES if quick else None
    out = []
    dictionary = None
    if not quick and small:  # trained on the corpus captures, tried on the others (a shipped dictionary)
        corpus_chunks = [chunk for name in small for chunk in compaction.fresh_chunks(plain_dbs[name])[0]]
        dictionary = compaction.train_dictionary(corpus_chunks)
    for label, members in groups:
        print(f"bench: compaction candidates on {label} ...", file=sys.stderr, flush=True)
        measured = compaction.measure([plain_dbs[name] for name in members], repeats=1 if quick else 2,
                                      dictionary=None if label == "six small captures" else dictionary, names=names)
        measured["label"] = label
        measured["input_bytes"] = sum(sizes[name] for name in members)
        out.append(measured)
    return out


def table_rows(result: dict | None) -> list[tuple[str, str, str, str]]:
    """(figure, value, ratio, target) rows for the bench's summary table."""
    if not result:
        return []
    rows = []
    for row in result["captures"]:
        rows.append((
            (f"default `irlens ingest` vs `--no-compact`, {row['name']} ({row['input_bytes'] / MB:.1f} MB): "
            f"wall, median of {row['repeats']} pairs (compaction's share)"),
            f"{row['default_seconds']:.2f} s vs {row['no_compact_seconds']:.2f} s ({row['compaction_seconds']:.2f} s)",
            f"{row['ratio']:.2f}× (pairs {min(row['all_ratios']):.2f}-{max(row['all_ratios']):.2f})",
            f"≤ {TIME_TARGET}×",
        ))
        rows.append((
            "  stored by the default ingest, of the input (with --no-compact); its peak RSS (with --no-compact)",
            (f"{row['stored_share'] * 100:.2f}% ({row['stored_no_compact_share'] * 100:.2f}%); "
             f"{row['max_rss'] / 2**20:.0f} MiB ({row['max_rss_no_compact'] / 2**20:.0f} MiB)"),
            "", f"≤ {row['share_target'] * 100:g}%",
        ))
    if "small_together_share" in result:
        rows.append(("six small captures, one default ingest each into one database: stored, of their input",
                     f"{result['small_together_share'] * 100:.2f}%", "", f"≤ {SMALL_TARGET * 100:g}%"))
    if result.get("gpu_capture_missing"):
        rows.append(("real GPU autotune capture", f"absent: {result['gpu_capture_missing']}", "", ""))
    for measured in result.get("curve", []):
        base = measured["rows"][0]["bytes"]
        raw = measured["raw_fresh_bytes"]
        for candidate in measured["rows"]:
            rows.append((
                (f"compaction candidate on {measured['label']} ({raw / MB:.0f} MB of distinct texts): "
                f"{candidate['name']}; blob bytes, CPU ms per MB"),
                (f"{candidate['bytes'] / MB:.2f} MB ({candidate['bytes'] / measured['input_bytes'] * 100:.2f}% of input); "
                f"{candidate['cpu_seconds'] / raw * MB * 1000:.1f} ms"),
                f"{candidate['bytes'] / base:.3f}× ingest's", "",
            ))
    return rows
