"""Ingest figures: wall time, MB/s, peak RSS (child process), and stored size for the whole corpus."""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.inputs import REPO, archive_raw_bytes, corpus_archives

IRLENS = str(Path(sys.executable).with_name("irlens"))


@dataclass
class ChildResult:
    seconds: float
    max_rss: int  # bytes
    cpu_seconds: float  # user + system
    returncode: int
    stdout: bytes
    stderr: bytes


# A child's peak RSS from wait4 counts its parent's memory too: fork copies the parent's address space
# and exec folds that copy's high-water mark into the child's. A bench process that had grown to 370 MiB
# (the compaction curve holds texts) reported 370 MiB for every child after it, irlens and tritonparse
# alike. So each command starts from this small launcher (`python -S`, ~10 MiB), which times it and
# reports its rusage on the descriptor named first.
_LAUNCHER = """
import os, sys, time
report = int(sys.argv[1])
started = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ, file_actions=[(os.POSIX_SPAWN_CLOSE, report)])
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
os.write(report, b"%r %d %r %d" % (seconds, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)))
"""


def run_child(argv: list[str], env: dict | None = None) -> ChildResult:
    """Run a command; wall time and the command's own peak RSS and CPU (through _LAUNCHER)."""
    if argv[0] == IRLENS:  # this checkout's code, not the one the venv's `irlens` script was installed from
        env = dict(env if env is not None else os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, str(write_end), *argv], stdout=out,
                                       stderr=err, cwd=REPO, env=env, pass_fds=(write_end,))
        finally:
            os.close(write_end)
        with os.fdopen(read_end, "rb") as report:
            reported = report.read()
        process.wait()
        if not reported:
            err.seek(0)
            raise SystemExit(f"bench: could not run {argv[0]}: {err.read().decode()[-2000:]}")
        seconds, max_rss, cpu, returncode = reported.split()
        out.seek(0)
        err.seek(0)
        return ChildResult(float(seconds), int(max_rss) * 1024, float(cpu), int(returncode), out.read(), err.read())


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


def fresh_db(db: Path) -> Path:
    """`db` with no SQLite file (nor its WAL, shared memory or migration lock) left from before."""
    for suffix in ("", "-wal", "-shm", ".migrate-lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def ingest(paths: list[Path], db_path: Path, extra: list[str] = ()) -> ChildResult:
    """`irlens ingest` as a user runs it (it compacts before it returns), plus `extra` arguments."""
    result = run_child([IRLENS, "ingest", "--quiet", "--db", f"sqlite:///{db_path}", *extra, *map(str, paths)])
    if result.returncode != 0:
        raise SystemExit(f"bench: irlens ingest failed ({result.returncode}):\n{result.stderr.decode()[-4000:]}")
    return result


def bench_ingest(path: Path, workdir: Path, repeats: int = 1) -> dict:
    """Ingest one big log into a fresh SQLite database with the default command (compaction
    included); the grep baseline is measured in the same run."""
    warm(path)
    size = path.stat().st_size
    grep_seconds, banners = grep_baseline(path)
    runs = []
    for attempt in range(repeats):
        db = fresh_db(workdir / f"ingest-{size}-{attempt}.db")
        runs.append(ingest([path], db))
        fresh_db(db)
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


def _vacuum(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("VACUUM")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return db.stat().st_size


def cold_pack_reads(db: Path, rounds: int = 3) -> list[float]:
    """Seconds to read one text of each pack with no pack or text cached (in process, best of
    `rounds` per pack): what a cold snapshot or diff page pays for its text."""
    from sqlalchemy import select

    from app.store import blobs
    from app.store.db import Database
    from app.store.models import Blob

    database = Database(f"sqlite:///{db}")
    try:
        with database.session() as session:
            first: dict[str, str] = {}
            for pack, digest in session.execute(select(Blob.pack, Blob.hash).where(Blob.codec == blobs.CODEC_PACKED)):
                first.setdefault(pack, digest)
            best = dict.fromkeys(first, float("inf"))
            for _ in range(rounds):
                for pack, digest in sorted(first.items()):
                    blobs.PACKS.packs.clear()
                    blobs.PACKS.size = 0
                    session.expunge_all()
                    start = time.perf_counter()
                    blobs.BlobReader().get(session, digest)
                    best[pack] = min(best[pack], time.perf_counter() - start)
        return sorted(best.values())
    finally:
        database.dispose()


SMALL_CAPTURE_BYTES = (2_000_000, 32_000_000)  # raw bytes: an ordinary single upload of a few kernels


def archives_by_size(low: int, high: int) -> list[Path]:
    """The corpus archives of `low` <= raw bytes < `high`, smallest first. Issue 16's "small captures"
    (ordinary single uploads of 3.6-21 MB) are those of 2-32 MB; the ones under 2 MB are mostly
    metadata, where the empty schema's fixed floor (`empty_db_bytes`) dominates."""
    sized = sorted((archive_raw_bytes([archive]), archive) for archive in corpus_archives())
    return [archive for size, archive in sized if low <= size < high]


def empty_db_bytes(workdir: Path) -> int:
    """An irlens database with the schema and no run, after VACUUM: every table and index takes a
    page at least, whatever a capture holds."""
    from app.store.db import Database

    db = fresh_db(workdir / "empty.db")
    Database(f"sqlite:///{db}").dispose()
    return _vacuum(db)


def bench_storage(workdir: Path, one_run: bool = False, archives: list[Path] | None = None,
                  name: str = "corpus.db") -> dict:
    """Corpus archives (all by default) into one SQLite database, one `irlens ingest` per archive as
    a user runs it: each compacts what it stored (issue 29), which leaves what a server's background
    compaction leaves after each upload (tests/test_cli_compaction.py); then VACUUM; then `irlens
    index --backfill` (the map indexes) and VACUUM again. The same ingests with --no-compact into a
    second database give the size and cold reads without compaction, and the ingest's own peak RSS."""
    archives = archives or corpus_archives()
    groups = [archives] if one_run else [[archive] for archive in archives]
    plain = fresh_db(workdir / f"plain-{name}")
    plain_rss = max(ingest(group, plain, ["--no-compact"]).max_rss for group in groups)
    ingested = _vacuum(plain)
    reads_before = cold_pack_reads(plain)
    fresh_db(plain)
    db = fresh_db(workdir / name)
    start = time.perf_counter()
    compact_seconds, compact_rss = 0.0, 0
    for group in groups:
        done = ingest(group, db, ["--json"])
        compaction = json.loads(done.stdout)["compaction"]
        if not compaction or "error" in compaction:
            raise SystemExit(f"bench: irlens ingest did not compact (IRLENS_RECOMPRESS_LEVEL=0?): {compaction}")
        compact_seconds += compaction["seconds"]
        compact_rss = max(compact_rss, done.max_rss)
    seconds = time.perf_counter() - start
    compacted = _vacuum(db)
    reads_after = cold_pack_reads(db)
    # A server also stores the map pages' line indexes after each upload (app/insight/precompute.py).
    indexed = run_child([IRLENS, "index", "--backfill", "--quiet", "--db", f"sqlite:///{db}"])
    if indexed.returncode != 0:
        raise SystemExit(f"bench: irlens index failed ({indexed.returncode}):\n{indexed.stderr.decode()[-4000:]}")
    stored = _vacuum(db)
    raw = archive_raw_bytes(archives)
    breakdown = db_breakdown(db)
    return {
        "archives": len(archives),
        "archive_names": [archive.name.removesuffix(".tar.xz") for archive in archives],
        "raw_bytes": raw,
        "db_bytes": stored,
        "share": stored / raw,
        "compacted_bytes": compacted,  # right after the (compacting) ingests, before the map indexes
        "compacted_share": compacted / raw,
        "ingested_bytes": ingested,  # the same ingests, not compacted
        "ingested_share": ingested / raw,
        "compact_seconds": compact_seconds,  # the ingests' compaction, wall (from their --json)
        "max_rss": compact_rss,  # the largest ingest's peak RSS, compaction included
        "max_rss_no_compact": plain_rss,  # the same with --no-compact
        # one text per pack, cold: compacted against right after ingest, same run
        "cold_read_p50": statistics.median(reads_after) if reads_after else None,
        "cold_read_max": max(reads_after, default=None),
        "cold_read_p50_before": statistics.median(reads_before) if reads_before else None,
        "cold_read_max_before": max(reads_before, default=None),
        "seconds": seconds,
        "db_path": str(db),
        **breakdown,
    }
