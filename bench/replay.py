"""Replay over the corpus: how faithfully each capture replays, and what a replay costs.

    .venv/bin/python -m bench.replay [--corpus DIR] [--pythons 3.9=PY,3.1=PY] [--only NAME...]

Each capture (a corpus archive) is ingested into a fresh SQLite file, then every compilation with
MLIR dumps is replayed (app/replay) with the interpreter named for its Triton version (or, where the
capture names none, the one whose pass list pairs with most dumps). Per capture it prints the passes
`same` / `differs` / `not-replayable` / `error`, how many changed the IR and how many of those came
out `same`, and why each `differs` differs. Times: the worker's start (process start and `import
triton`, measured apart), the dry run that records the backend's pass list, and each pass (parse, run,
print, as the worker measures them; apart from them, the comparisons here: the result against the next
dump, and whether the pass changed the IR at all). The baseline, measured in the same run:
`PY -c "import triton"`, a bare process start with Triton imported. Results go to
bench/results/replay.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import inputs

DEFAULT_CAPTURES = ("sm90_mix", "sm90_gluon", "gfx942_mix", "gfx1250_tdm", "gfx1250_fail", "sm90_llvm", "sm90_filter",
                    "sm90_dumppath", "old_3.1_sm90")
_KINDS = (("ran inside", "nested in the pass before"), ("another function of", "another function of a pass"),
          ("the compilation's last dump", "last dump"), ("no binding", "no binding"))
RESULTS = Path(__file__).resolve().parent / "results" / "replay.json"


def bare_start(python: str, repeats: int = 3) -> float:
    """Seconds for `python -c "import triton"`: the floor under every replay process."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([python, "-I", "-c", "import triton"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times)


def replay_capture(archive: Path, pythons: str, workdir: Path) -> dict:
    from sqlalchemy import select

    from app.replay.replay import best_interpreter, capture_version, replay, store_source
    from app.replay.runner import choose_python, parse_pythons
    from app.store.db import Database
    from app.store.models import Compilation
    from tests.conftest import ingest_paths

    database = Database(f"sqlite:///{workdir / (archive.name + '.db')}")
    run_id = ingest_paths(database, [archive])["run"]
    compilations = []
    with database.session() as session:
        for compilation in session.scalars(select(Compilation).where(Compilation.run_id == run_id)
                                           .order_by(Compilation.ordinal)):
            source = store_source(session, compilation)
            if not any(d.kind == "mlir" for d in source.dumps):
                compilations.append({"compilation": source.compilation, "kernel": compilation.kernel,
                                     "status": compilation.status, "skipped": "no MLIR dump (a cache-only compilation, or one that failed before any pass)",
                                     "logged_error": source.logged_error})
                continue
            python, why = choose_python(capture_version(source), None, pythons)
            if capture_version(source) is None:
                python, why = best_interpreter(source, list(parse_pythons(pythons).values()))
            if python is None:
                compilations.append({"compilation": source.compilation, "skipped": why})
                continue
            started = time.perf_counter()
            report = replay(source, python)
            report["wall_seconds"] = time.perf_counter() - started
            report["kernel"] = compilation.kernel
            report["why"] = why
            compilations.append(report)
    database.dispose()
    return {"capture": archive.name.removesuffix(".tar.xz"), "compilations": compilations}


def summarise(capture: dict) -> dict:
    totals = {"same": 0, "differs": 0, "not-replayable": 0, "error": 0, "passes": 0, "changed": 0, "changed_same": 0}
    pass_seconds, compare_seconds, starts, imports, plans, walls, differs = [], [], [], [], [], [], []
    kinds: dict[str, int] = {}
    for report in capture["compilations"]:
        if "summary" not in report:
            continue
        for key in totals:
            totals[key] += report["summary"][key]
        seconds = report["seconds"]
        starts.append(seconds.get("process_start") or 0)
        imports.append(seconds.get("import_triton") or 0)
        plans.append(seconds.get("plan") or 0)
        walls.append(report["wall_seconds"])
        for entry in report["passes"]:
            if entry["status"] == "not-replayable":
                kind = next((label for prefix, label in _KINDS if (entry["reason"] or "").startswith(prefix)), "other")
                kinds[kind] = kinds.get(kind, 0) + 1
            if entry.get("seconds"):
                times = dict(entry["seconds"])
                compare_seconds.append(times.pop("compare", 0.0) + times.pop("changed", 0.0))
                if times:
                    pass_seconds.append(sum(times.values()))
            if entry["status"] in ("differs", "error"):
                differs.append({"compilation": report["compilation"], "index": entry["index"], "pass": entry["pass"],
                                "status": entry["status"], "reason": entry["reason"],
                                "logged_error": entry.get("logged_error"), "diff": entry["diff"][:6]})
    ms = 1000.0
    return {
        **totals,
        "changed_same_percent": round(100.0 * totals["changed_same"] / totals["changed"], 1) if totals["changed"] else None,
        "compilations": sum("summary" in r for r in capture["compilations"]),
        "skipped": [r for r in capture["compilations"] if "summary" not in r],
        "ms": {
            "process_start_median": round(ms * statistics.median(starts), 1) if starts else None,
            "import_triton_median": round(ms * statistics.median(imports), 1) if imports else None,
            "plan_median": round(ms * statistics.median(plans), 1) if plans else None,
            "pass_median": round(ms * statistics.median(pass_seconds), 2) if pass_seconds else None,
            "pass_max": round(ms * max(pass_seconds), 1) if pass_seconds else None,
            "compare_median": round(ms * statistics.median(compare_seconds), 2) if compare_seconds else None,
            "compilation_median": round(ms * statistics.median(walls), 1) if walls else None,
        },
        "not_same": differs,
        "not_replayable": kinds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=inputs.CORPUS, help="folder of the corpus archives")
    parser.add_argument("--pythons", default=os.environ.get("IRLENS_REPLAY_PYTHONS"),
                        help="interpreters per Triton version (as IRLENS_REPLAY_PYTHONS)")
    parser.add_argument("--only", nargs="*", default=list(DEFAULT_CAPTURES))
    args = parser.parse_args(argv)
    from app.replay.runner import parse_pythons

    if not parse_pythons(args.pythons):
        print("bench.replay: name the interpreters: --pythons 3.9=PY,3.1=PY", file=sys.stderr)
        return 2
    results = {"started": time.time(), "baseline_import_triton_ms": {
        version: round(1000 * bare_start(python), 1) for version, python in parse_pythons(args.pythons).items()},
        "captures": {}}
    with tempfile.TemporaryDirectory(prefix="irlens-bench-replay-") as tmp:
        for name in args.only:
            archive = args.corpus / f"{name}.tar.xz"
            if not archive.exists():
                print(f"bench.replay: no {archive}", file=sys.stderr)
                continue
            print(f"bench.replay: {name} ...", file=sys.stderr, flush=True)
            capture = replay_capture(archive, args.pythons, Path(tmp))
            results["captures"][name] = summarise(capture)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"baseline `import triton` (ms): {results['baseline_import_triton_ms']}")
    print(f"{'capture':<14} {'comp':>4} {'passes':>6} {'same':>5} {'differs':>7} {'not-repl':>8} {'error':>5} "
          f"{'changed':>7} {'chg same':>8} {'start ms':>8} {'plan ms':>7} {'pass ms':>7} {'cmp ms':>7} {'per comp ms':>11}")
    for name, row in results["captures"].items():
        ms = row["ms"]
        print(f"{name:<14} {row['compilations']:>4} {row['passes']:>6} {row['same']:>5} {row['differs']:>7} "
              f"{row['not-replayable']:>8} {row['error']:>5} {row['changed']:>7} "
              f"{str(row['changed_same_percent']) + '%':>8} {ms['process_start_median']!s:>8} {ms['plan_median']!s:>7} "
              f"{ms['pass_median']!s:>7} {ms['compare_median']!s:>7} {ms['compilation_median']!s:>11}")
        print(f"    not-replayable: {row['not_replayable']}")
        for entry in row["not_same"]:
            print(f"    {entry['compilation']} /s/{entry['index']} {entry['pass']}: {entry['status']}: {entry['reason']}")
        for skipped in row["skipped"]:
            print(f"    {skipped.get('compilation')}: skipped: {skipped['skipped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
