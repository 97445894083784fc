"""The stored data's upkeep: `irlens db upgrade` (the schema), `gc`/`retention`, `delete`, `compact`
and `index` (the op index and the map pages' line indexes)."""

from __future__ import annotations

import argparse
import sys
import time

from app.cli.common import database_from, settings_from


def cmd_db(args: argparse.Namespace) -> int:
    from app.store.db import make_engine, upgrade_schema

    engine = make_engine(settings_from(args).database_url)
    try:
        before, after = upgrade_schema(engine, args.revision)
    finally:
        engine.dispose()
    if before == after:
        print(f"the database schema is at revision {after}")
    else:
        print(f"upgraded the database schema from {before or 'nothing'} to revision {after}")
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    from app.store.retention import apply_retention, collect_all_blobs, expired_runs

    settings = settings_from(args)
    days = args.days if args.days is not None else settings.retention_days
    db = database_from(args)
    try:
        if days:
            if args.dry_run:
                with db.session() as session:
                    expired = expired_runs(session, days)
                for run_id in expired:
                    print(f"would delete run {run_id} (older than {days:g} days)")
            else:
                for deleted in apply_retention(db, days):
                    print(f"deleted run {deleted.run} {deleted.title!r}: {deleted.blobs} blobs freed")
        if not args.dry_run:
            with db.session() as session:
                removed = collect_all_blobs(session)
                session.commit()
            print(f"removed {removed} blobs no run used")
    finally:
        db.dispose()
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from app.insight import precompute
    from app.insight.op_index import backfill, index_run
    from app.store.models import Run

    if not args.backfill and not args.runs:
        print("irlens: say --backfill (every run not indexed yet) or name runs to re-index", file=sys.stderr)
        return 2
    db = database_from(args)
    started = time.monotonic()

    def progress(done: int, total: int, run_id: str) -> None:
        if not args.quiet:
            print(f"indexed {done}/{total} runs ({run_id}, {time.monotonic() - started:.1f} s)", file=sys.stderr)

    try:
        for number, run_id in enumerate(args.runs, start=1):
            with db.session() as session:
                if session.get(Run, run_id) is None:
                    print(f"irlens: no run {run_id}", file=sys.stderr)
                    return 1
                index_run(session, run_id)
                session.commit()
            precompute.prepare_run(db, run_id)  # and its map pages' Python-line indexes
            progress(number, len(args.runs), run_id)
        count = backfill(db.session, progress) if args.backfill else 0
        points = 0
        if args.backfill:
            from app.insight.kernel_points import backfill_points

            with db.session() as session:  # kernel history's points of runs that have none yet
                points = backfill_points(session)
            precompute.prepare_pending(db)
    finally:
        db.dispose()
    print(f"op index: {len(args.runs) + count} runs indexed" + (f"; kernel history: {points} points added" if points else ""))
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from app.store.compaction import compact_pending

    level = args.level if args.level is not None else settings_from(args).recompress_level
    db = database_from(args)
    try:
        done = compact_pending(db.session, level)
    finally:
        db.dispose()
    print(f"compacted {done.blobs} stored frames at zstd level {level}: "
          f"{done.bytes_before:,} -> {done.bytes_after:,} bytes")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from app.store.retention import delete_run

    db = database_from(args)
    status = 0
    try:
        for run_id in args.runs:
            deleted = delete_run(db, run_id, "deleted from the command line:")
            if deleted is None:
                print(f"irlens: no run {run_id}", file=sys.stderr)
                status = 1
            else:
                print(f"deleted run {deleted.run} {deleted.title!r}: {deleted.blobs} blobs freed")
    finally:
        db.dispose()
    return status


def add_parser(commands: argparse._SubParsersAction) -> None:
    db = commands.add_parser("db", help="the database schema")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply the migrations (the app also does on start)")
    upgrade.add_argument("--db", help="database URL")
    upgrade.add_argument("--revision", default="head", help="target revision (default: the newest)")
    db.set_defaults(handler=cmd_db)

    gc = commands.add_parser("gc", aliases=["retention"],
                             help="delete runs older than the retention, then blobs no run uses")
    gc.add_argument("--db", help="database URL")
    gc.add_argument("--days", type=float, help="delete runs older than this (default: the retention_days setting)")
    gc.add_argument("--dry-run", action="store_true", help="list the runs that would go; change nothing")
    gc.set_defaults(handler=cmd_gc)

    index = commands.add_parser("index", help="the op index (op:, group:, layout: search) and the map pages' line indexes of runs")
    index.add_argument("runs", nargs="*", metavar="RUN", help="runs to index again")
    index.add_argument("--backfill", action="store_true", help="index every run that is not indexed yet")
    index.add_argument("--db", help="database URL")
    index.add_argument("--quiet", action="store_true", help="no progress lines")
    index.set_defaults(handler=cmd_index)

    compact = commands.add_parser("compact", help="merge freshly stored packs and recompress them at a strong zstd "
                                  "level now (the server does it in the background after each ingest)")
    compact.add_argument("--db", help="database URL")
    compact.add_argument("--level", type=int, help="zstd level (default: the recompress_level setting)")
    compact.set_defaults(handler=cmd_compact)

    delete = commands.add_parser("delete", help="delete runs by id, and the blobs only they used")
    delete.add_argument("runs", nargs="+", metavar="RUN")
    delete.add_argument("--db", help="database URL")
    delete.set_defaults(handler=cmd_delete)
