"""Ingest figures: wall time, MB/s, peak RSS (child process), and stored size for the whole corpus."""

from __future__ import annotations

import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.inputs import REPO, corpus_archives, raw_input_bytes

IRLENS = str(Path(sys.executable).with_name("irlens"))


@dataclass
class ChildResult:
    seconds: float
    max_rss: int  # bytes
    cpu_seconds: float  # user + system
    returncode: int
    stdout: bytes
    stderr: bytes


def run_child(argv: list[str], env: dict | None = None) -> ChildResult:
    """Run a command; wall time and the child's own peak RSS (os.wait4 gives that child's rusage)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=REPO, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return ChildResult(seconds, usage.ru_maxrss * 1024, cpu, process.returncode, out.read(), err.read())


def warm(path: Path) -> None:
    """Read a file once so that grep and the ingest both find it in the page cache."""
    with open(path, "rb") as handle:
        while handle.read(16 << 20):
            pass


def grep_baseline(path: Path, repeats: int = 3) -> tuple[float, int]:
    """Seconds for `grep -c '^// -----// IR Dump' FILE` (its output read through a pipe), median of runs."""
    times, count = [], 0
    for _ in range(repeats):
        result = run_child(["grep", "-c", "^// -----// IR Dump", str(path)])
        count = int(result.stdout.strip() or 0)
        times.append(result.seconds)
    return statistics.median(times), count


def ingest(paths: list[Path], db_path: Path, extra: list[str] = ()) -> ChildResult:
    result = run_child([IRLENS, "ingest", "--quiet", "--db", f"sqlite:///{db_path}", *extra, *map(str, paths)])
    if result.returncode != 0:
        raise SystemExit(f"bench: irlens ingest failed ({result.returncode}):\n{result.stderr.decode()[-4000:]}")
    return result


def bench_ingest(path: Path, workdir: Path, repeats: int = 1) -> dict:
    """Ingest one big log into a fresh SQLite database; the grep baseline is measured in the same run."""
    warm(path)
    size = path.stat().st_size
    grep_seconds, banners = grep_baseline(path)
    runs = []
    for attempt in range(repeats):
        db = workdir / f"ingest-{size}-{attempt}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        runs.append(ingest([path], db))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    best = min(runs, key=lambda r: r.seconds)
    return {
        "bytes": size,
        "banners": banners,
        "grep_seconds": grep_seconds,
        "seconds": best.seconds,
        "all_seconds": [r.seconds for r in runs],
        "mb_per_s": size / best.seconds / 1e6,
        "ratio_to_grep": best.seconds / grep_seconds,
        "cpu_seconds": best.cpu_seconds,
        # Peak RSS moves by ±10 MiB from run to run (glibc's heap); the median of the runs is reported.
        "max_rss": int(statistics.median(r.max_rss for r in runs)),
        "all_max_rss": [r.max_rss for r in runs],
    }


def db_breakdown(db_path: Path) -> dict:
    with sqlite3.connect(db_path) as connection:
        blob_bytes = connection.execute("select coalesce(sum(length(data)), 0) from blobs").fetchone()[0]
        try:
            tables = dict(connection.execute("select name, sum(pgsize) from dbstat group by name").fetchall())
        except sqlite3.OperationalError:
            tables = {}
    return {"blob_data_bytes": blob_bytes, "tables": tables}


def bench_storage(workdir: Path, one_run: bool = False) -> dict:
    """All corpus archives into one SQLite database (one ingest per archive), then VACUUM."""
    db = workdir / "corpus.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    archives = corpus_archives()
    start = time.perf_counter()
    if one_run:
        ingest(archives, db)
    else:
        for archive in archives:
            ingest([archive], db)
    seconds = time.perf_counter() - start
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("VACUUM")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    raw = raw_input_bytes()
    stored = db.stat().st_size
    breakdown = db_breakdown(db)
    return {
        "archives": len(archives),
        "raw_bytes": raw,
        "db_bytes": stored,
        "share": stored / raw,
        "seconds": seconds,
        "db_path": str(db),
        **breakdown,
    }
