"""tritonparse trace ingest: wall time, MB/s and peak RSS of `irlens ingest` on a big trace, against
two baselines over the same file in the same run: `grep -c '"event_type"'` (reading the bytes) and a
Python loop that json.loads every line (the least any reader of the format does).

    .venv/bin/python -m bench.traces [--mb 200] [--repeats 3]

The trace is the committed H100 fixture (tests/fixtures/tritonparse/launches_h100_triton36.ndjson.gz:
5 compilations, 14 launches) copied until it reaches the size, each copy's kernel names and hashes
renamed (`add_kernel` -> `add_kernel_c3`, IR text included) so that no copy shares a compilation or a
stored text with another. Written streaming to $TMPDIR/irlens-bench/traces/ and kept there.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

from bench.ingest import fresh_db, ingest, run_child, warm
from bench.inputs import REPO

FIXTURE = REPO / "tests" / "fixtures" / "tritonparse" / "launches_h100_triton36.ndjson.gz"
KERNELS = (b"add_kernel", b"scale_kernel", b"axpy_kernel")
JSON_BASELINE = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"


def big_trace(size: int) -> Path:
    folder = Path(tempfile.gettempdir()) / "irlens-bench" / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"trace-{size >> 20}MiB.ndjson"
    if path.exists() and path.stat().st_size >= size:
        return path
    lines = gzip.decompress(FIXTURE.read_bytes()).splitlines(keepends=True)
    hashes = sorted({h.encode() for line in lines for h in re.findall(r'"hash": ?"([0-9a-f]{64})"', line.decode())})
    written, copy = 0, 0
    with open(path.with_suffix(".part"), "wb") as out:
        while written < size:
            renames = [(name, name + b"_c%d" % copy) for name in KERNELS]
            renames += [(h, hashlib.sha256(h + b"%d" % copy).hexdigest().encode()) for h in hashes]
            for line in lines:
                for old, new in renames:
                    line = line.replace(old, new)
                out.write(line)
                written += len(line)
            copy += 1
    path.with_suffix(".part").rename(path)
    return path


def measure(path: Path, workdir: Path, repeats: int) -> dict:
    warm(path)
    size = path.stat().st_size
    grep = [run_child(["grep", "-c", '"event_type"', str(path)]) for _ in range(3)]
    events = int(grep[0].stdout.strip() or 0)
    loads = [run_child([sys.executable, "-c", JSON_BASELINE, str(path)]) for _ in range(repeats)]
    runs = []
    for attempt in range(repeats):
        db = workdir / f"trace-{attempt}.db"
        runs.append(ingest([path], db, ["--no-compact"]))
        fresh_db(db)
    best = min(runs, key=lambda r: r.seconds)
    grep_seconds = statistics.median(r.seconds for r in grep)
    loads_seconds = min(r.seconds for r in loads)
    return {
        "bytes": size,
        "events": events,
        "grep_seconds": grep_seconds,
        "json_loads_seconds": loads_seconds,
        "json_loads_max_rss": min(r.max_rss for r in loads),
        "seconds": best.seconds,
        "all_seconds": [r.seconds for r in runs],
        "mb_per_s": size / best.seconds / 1e6,
        "ratio_to_grep": best.seconds / grep_seconds,
        "ratio_to_json_loads": best.seconds / loads_seconds,
        "max_rss": int(statistics.median(r.max_rss for r in runs)),
        "all_max_rss": [r.max_rss for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="trace size in MiB (default 200)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = big_trace(args.mb << 20)
    with tempfile.TemporaryDirectory(prefix="irlens-bench-traces-") as workdir:
        result = measure(path, Path(workdir), args.repeats)
    mib = 1 << 20
    print(f"trace: {result['bytes'] / 1e6:.0f} MB, {result['events']} events")
    print(f"grep -c baseline        {result['grep_seconds'] * 1000:8.0f} ms   1x")
    print(f"json.loads per line     {result['json_loads_seconds'] * 1000:8.0f} ms   "
          f"{result['json_loads_seconds'] / result['grep_seconds']:.1f}x grep, "
          f"peak RSS {result['json_loads_max_rss'] / mib:.0f} MiB")
    print(f"irlens ingest (SQLite)  {result['seconds'] * 1000:8.0f} ms   {result['ratio_to_grep']:.1f}x grep, "
          f"{result['ratio_to_json_loads']:.2f}x json.loads; {result['mb_per_s']:.0f} MB/s; "
          f"peak RSS {result['max_rss'] / mib:.0f} MiB (runs {', '.join(f'{r / mib:.0f}' for r in result['all_max_rss'])})")
    out = REPO / "bench" / "results" / "traces.json"
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
