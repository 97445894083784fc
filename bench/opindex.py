"""Op index queries at team scale: `python -m bench.opindex [--db URL] [--runs 10000] [--snapshots 1000000]`.

Builds a database of RUNS runs and about SNAPSHOTS snapshots from the corpus: every archive is
ingested once (the templates), then runs are made by copying template compilations with their
snapshot and op index rows at the SQL level (INSERT ... SELECT), so blobs are shared and building
takes seconds, not a re-ingest. Each run gets template compilations in turn until it holds
SNAPSHOTS / RUNS snapshots; runs are a day apart, half listed, with four owners and a few tags.

Then it times `search_compilations` (the /search query: SQL and Python) for common, rare, combined
and absent terms, for an anonymous reader of a server requiring tokens (listed runs only) and for
one that sees everything, and the compilation page's First seen query; p50 and p95 per query.
The default database is a SQLite file in $TMPDIR; pass a PostgreSQL URL for the other.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select, text

from app.ingest.pipeline import Ingest
from app.insight.op_search import first_seen, search_compilations, split_query
from app.settings import Settings
from app.store.db import Database
from app.store.models import Compilation, CompilationTerm, Run, Snapshot
from app.urls import Urls
from app.web.auth import Identity, visible_runs
from bench.inputs import corpus_archives

QUERIES = (
    "group:mma",  # in most compilations
    "op:tt.load",
    "layout:blocked",
    "op:ttng.async_tma_copy_global_to_local",  # in a few
    "group:tdm",
    "layout:linear",
    "group:tma op:tt.dot",  # two terms
    "group:mma kernel:matmul",  # with a compilation word
    "layout:linear tag:fp8",  # with a run word
    "group:barrier owner:alice",
    "op:no.such_op",  # absent: suggestions
)
OWNERS = ("alice", "bob", "carol", "dave")


def build(db: Database, runs: int, snapshots: int) -> dict:
    started = time.perf_counter()
    with db.session() as session:
        for archive in corpus_archives():
            Ingest(session, title=archive.name).ingest([archive])
            session.commit()
        templates = list(session.execute(
            select(Compilation.pk, func.count(Snapshot.index))
            .join(Snapshot, Snapshot.compilation_pk == Compilation.pk)
            .group_by(Compilation.pk).order_by(Compilation.pk)
        ))
        next_pk = (session.scalar(select(func.max(Compilation.pk))) or 0) + 1
    ingested = time.perf_counter() - started
    per_run = snapshots / runs
    base = datetime(2026, 1, 1, tzinfo=UTC)
    run_rows, plan, cursor, total = [], [], 0, 0
    for number in range(runs):
        run_id = f"{number:032x}"
        run_rows.append({
            "id": run_id, "title": f"bench run {number}", "created_at": base + timedelta(hours=number),
            "owner": OWNERS[number % len(OWNERS)], "listed": number % 2 == 0,
            "tags": ["fp8"] if number % 10 == 0 else [], "input_bytes": 0, "damaged": 0,
            "stats": {"op_index": 1},
        })
        held, ordinal = 0, 1
        while held < per_run:
            template, count = templates[cursor % len(templates)]
            if held and total + held + count > per_run * (number + 1):
                break  # the next run starts with it, so the total stays near SNAPSHOTS
            cursor += 1
            plan.append({"new_pk": next_pk, "template_pk": template, "run_id": run_id, "ordinal": ordinal})
            next_pk += 1
            ordinal += 1
            held += count
        total += held
    copied = [c.name for c in Compilation.__table__.columns if c.name not in ("pk", "run_id", "ordinal")]
    snapshot_columns = [c.name for c in Snapshot.__table__.columns if c.name not in ("pk", "compilation_pk")]
    with db.engine.begin() as connection:
        connection.execute(Run.__table__.insert(), run_rows)
        connection.execute(text("CREATE TABLE bench_plan (new_pk INTEGER PRIMARY KEY, template_pk INTEGER, "
                                "run_id VARCHAR(32), ordinal INTEGER)"))
        connection.execute(text("INSERT INTO bench_plan VALUES (:new_pk, :template_pk, :run_id, :ordinal)"), plan)
        quoted = ", ".join(f'"{name}"' for name in copied)
        connection.execute(text(
            f'INSERT INTO compilations (pk, run_id, ordinal, {quoted}) '
            f'SELECT p.new_pk, p.run_id, p.ordinal, {", ".join(f"c.{q}" for q in quoted.split(", "))} '
            "FROM bench_plan p JOIN compilations c ON c.pk = p.template_pk"
        ))
        snap_quoted = ", ".join(f'"{name}"' for name in snapshot_columns)
        connection.execute(text(
            f"INSERT INTO snapshots (compilation_pk, {snap_quoted}) "
            f'SELECT p.new_pk, {", ".join(f"s.{q}" for q in snap_quoted.split(", "))} '
            "FROM bench_plan p JOIN snapshots s ON s.compilation_pk = p.template_pk"
        ))
        connection.execute(text(
            "INSERT INTO compilation_terms (term_id, compilation_pk, first_index, last_index) "
            "SELECT t.term_id, p.new_pk, t.first_index, t.last_index "
            "FROM bench_plan p JOIN compilation_terms t ON t.compilation_pk = p.template_pk"
        ))
        connection.execute(text("DROP TABLE bench_plan"))
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT setval(pg_get_serial_sequence('compilations', 'pk'), "
                                    "(SELECT max(pk) FROM compilations))"))
    if db.engine.dialect.name == "postgresql":  # what autovacuum does after a bulk load
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("ANALYZE"))
    with db.session() as session:
        counts = {
            "runs": session.scalar(select(func.count()).select_from(Run)),
            "compilations": session.scalar(select(func.count()).select_from(Compilation)),
            "snapshots": session.scalar(select(func.count()).select_from(Snapshot)),
            "index_rows": session.scalar(select(func.count()).select_from(CompilationTerm)),
        }
    return {**counts, "ingest_templates_s": round(ingested, 1),
            "build_s": round(time.perf_counter() - started, 1), "planned_snapshots": total}


def _percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1), "n": len(ordered)}


def measure(db: Database, rounds: int) -> dict:
    urls = Urls()
    readers = {
        "anonymous, tokens required (listed runs)": visible_runs(
            Identity(None), Settings(require_token=True, load_demo=False)),
        "everything visible": None,
    }
    results: dict = {}
    every: list[float] = []
    with db.session() as session:
        for reader, visible in readers.items():
            for query in QUERIES:
                parsed = split_query(query)
                samples, found = [], 0
                for _ in range(rounds):
                    start = time.perf_counter()
                    found = len(search_compilations(session, parsed, urls, visible)["compilations"])
                    samples.append(time.perf_counter() - start)
                    session.rollback()
                results[f"{reader}: {query}"] = {**_percentiles(samples), "results": found}
                print(f"  {query!r} ({reader}): {results[f'{reader}: {query}']}", file=sys.stderr)
                every.extend(samples)
        pks = list(session.scalars(select(Compilation.pk).order_by(func.random()).limit(rounds)))
        samples = []
        for pk in pks:
            compilation = session.get(Compilation, pk)
            start = time.perf_counter()
            first_seen(session, compilation, urls)
            samples.append(time.perf_counter() - start)
        results["compilation page First seen"] = _percentiles(samples)
    results["all search queries"] = _percentiles(every)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an empty database URL (default: a new SQLite file in $TMPDIR)")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--snapshots", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20, help="timed repetitions of each query")
    parser.add_argument("--reuse", action="store_true", help="the database is already built: only measure")
    args = parser.parse_args(argv)
    url = args.db or f"sqlite:///{Path(tempfile.mkdtemp(prefix='irlens-opindex-')) / 'bench.db'}"
    db = Database(url)
    try:
        report: dict = {"db": db.engine.dialect.name, "load_before": os.getloadavg()[0]}
        if not args.reuse:
            print(f"bench.opindex: building {args.runs} runs, ~{args.snapshots} snapshots ...", file=sys.stderr)
            report["built"] = build(db, args.runs, args.snapshots)
        if db.engine.dialect.name == "sqlite":
            report["sqlite_file_mb"] = round(Path(db.engine.url.database).stat().st_size / 1e6, 1)
        print("bench.opindex: timing queries ...", file=sys.stderr)
        report["queries"] = measure(db, args.rounds)
        report["load_after"] = os.getloadavg()[0]
    finally:
        db.dispose()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
