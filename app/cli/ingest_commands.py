"""Runs into a database or onto a server: `irlens ingest`, `irlens upload`, and `irlens capture` (run a
program with the dumps on, then ingest or upload what it wrote)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from app.cli.common import ProgressBar, collector_paused, settings_from
from app.cli.multipart import MultipartUpload

if TYPE_CHECKING:
    import httpx


def cmd_ingest(args: argparse.Namespace) -> int:
    import os

    missing = [path for path in args.paths if not os.path.exists(path)]
    if missing:  # a mistyped path: ingest none rather than a run without it
        for path in missing:
            print(f"irlens: {path} does not exist; nothing was ingested", file=sys.stderr)
        return 2
    from app.ingest.log_prescan import LogPrescan

    # Started before the imports of _ingest_paths (~0.4 s): the helper scans the logs meanwhile.
    prescan = LogPrescan.start(args.paths)
    try:
        return _ingest_paths(args, prescan)
    finally:
        if prescan is not None:
            prescan.close()


def _ingest_paths(args: argparse.Namespace, prescan) -> int:
    import os

    with collector_paused(freeze=getattr(args, "ends_process", False)):
        from app.ingest.disassembler import find_disassembler
        from app.ingest.pipeline import Ingest, IngestError
        from app.insight.page_data import run_summary
        from app.urls import Urls

        settings = settings_from(args)
    labels = _labels(args)
    if labels is None:
        return 2
    level = settings.compact_level  # recompress_level 0 keeps every text as ingest compressed it
    compact = not getattr(args, "no_compact", False) and level > 0 and settings.recompress_level > 0
    # quick: its packs are recompressed at recompress_level later (a server, `irlens compact`); the
    # ingest writes them compacted as it goes, so no second pass over them waits here
    quick = level < settings.recompress_level
    db = settings.database()
    total = sum(os.path.getsize(p) for p in args.paths if os.path.isfile(p)) or None
    bar = ProgressBar(total) if sys.stderr.isatty() and not args.quiet else None
    try:
        try:
            with db.session() as session:
                ingest = Ingest(
                    session, title=args.title or "", tags=args.tag or [], labels=labels, limits=settings.limits(), progress=bar,
                    disassembler=find_disassembler(settings.sass_disassembler), prescan=prescan,
                    compact_level=level if compact and quick else None,
                )
                run = ingest.ingest(args.paths)
                session.commit()
                summary = run_summary(session, run, Urls(settings.base_url))
        except IngestError as error:
            print(f"irlens: {error}", file=sys.stderr)
            return 2
        finally:
            if bar:
                bar.close()
        summary["compaction"] = _compact_fresh(db, level, quick) if compact else None
        if summary["compaction"] is not None and quick:  # what the ingest itself wrote compacted
            summary["compaction"].update(written_frames=ingest.blobs.new_blobs, written_bytes=ingest.blobs.stored_bytes)
    finally:
        db.dispose()
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for compilation in summary["compilations"]:
            counts = compilation["snapshots"]
            print(
                f"{compilation['id']:>4}  {compilation['status']:<8} {compilation['kernel'] or '?':<40} "
                f"{counts['mlir']:>5} mlir {counts['internal']:>3} internal {counts['llvm']:>4} llvm"
            )
        for warning in summary["warnings"]:
            print(f"warning: {warning['message']} {warning.get('path') or ''}", file=sys.stderr)
        print(_compaction_line(summary["compaction"], min(settings.compact_level, settings.recompress_level)))
        print(f"run {summary['run']}: {summary['url']}")
    return 0


def _compact_fresh(db, level: int, quick: bool) -> dict:
    """Compaction of what is still fresh (the log's texts stored alone, and any packs an earlier
    `--no-compact` left: this ingest wrote its packs compacted) at the quick level, as the server's
    background round does after an upload but cheap enough to wait for (app/store/compaction.py); then, on a SQLite file that is mostly this ingest, the pages of the
    packs it replaced are given back (VACUUM)."""
    import time

    from app.store.compaction import compact_pending

    started = time.perf_counter()
    try:
        done = compact_pending(db.session, level, quick=quick)
        db.release_free_pages()
    except Exception as error:  # noqa: BLE001 -- the run is committed and readable as ingest stored it
        print(f"warning: compaction failed ({error}); the run is stored, `irlens compact` retries it",
              file=sys.stderr)
        return {"error": str(error), "seconds": round(time.perf_counter() - started, 3)}
    return {"level": level, "frames": done.blobs, "bytes_before": done.bytes_before,
            "bytes_after": done.bytes_after, "seconds": round(time.perf_counter() - started, 3)}


def _compaction_line(compaction: dict | None, level: int) -> str:
    if compaction is None:
        why = "--no-compact" if level > 0 else "compact_level 0"
        return f"not compacted ({why}): `irlens compact` (or a server on this database) does it later"
    if "error" in compaction:
        return "not compacted: compaction failed (see the warning above)"
    written = (f"{compaction['written_frames']} new frames written as {compaction['written_bytes']:,} bytes, then "
               if "written_frames" in compaction else "")
    return (f"compacted at zstd level {level}: {written}{compaction['frames']} stored frames "
            f"{compaction['bytes_before']:,} -> {compaction['bytes_after']:,} bytes in {compaction['seconds']:.2f} s")

def cmd_upload(args: argparse.Namespace) -> int:
    import os
    from urllib.parse import urljoin

    import httpx

    server = (args.server or os.environ.get("IRLENS_SERVER") or "").rstrip("/")
    token = args.token or os.environ.get("IRLENS_TOKEN")
    if not server:
        print("irlens: which server? pass --server URL (or set IRLENS_SERVER)", file=sys.stderr)
        return 2
    headers = {"Accept": "application/json", "User-Agent": "irlens-upload"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    labels = _labels(args)
    if labels is None:
        return 2
    fields = [("title", args.title or "")] + [("tag", tag) for tag in args.tag or []]
    fields += [("label", f"{key}={value}") for key, value in labels.items()]
    if args.listed:
        fields.append(("listed", "1"))
    try:
        body = MultipartUpload(fields, args.paths)
    except OSError as error:
        print(f"irlens: {error}", file=sys.stderr)
        return 2
    bar = ProgressBar(body.length) if sys.stderr.isatty() and not args.quiet else None
    try:
        with httpx.Client(timeout=httpx.Timeout(60.0, read=args.timeout), headers=headers) as client:
            # Ask first, so a refused token does not cost the whole upload.
            check = client.get(f"{server}/-/whoami.json")
            if check.status_code == 401:
                print(f"irlens: {server} refused the token: {_error_text(check)}", file=sys.stderr)
                return 2
            if check.status_code == 200 and check.json().get("require_token") and not token:
                print(f"irlens: {server} needs a token to upload: pass --token (or set IRLENS_TOKEN)", file=sys.stderr)
                return 2
            response = client.post(
                f"{server}/runs",
                content=body.stream(bar),
                headers={"Content-Type": body.content_type, "Content-Length": str(body.length)},
            )
    except (httpx.HTTPError, OSError) as error:
        print(f"irlens: the upload to {server} failed: {error}", file=sys.stderr)
        return 2
    finally:
        if bar:
            bar.close()
    if response.status_code != 201:
        print(f"irlens: {server} answered {response.status_code}: {_error_text(response)}", file=sys.stderr)
        return 2
    summary = response.json()
    link = urljoin(server + "/", summary["url"])
    if args.json:
        print(json.dumps({**summary, "link": link}, indent=1))
        return 0
    for compilation in summary.get("compilations", []):
        counts = compilation["snapshots"]
        print(
            f"{compilation['id']:>4}  {compilation['status']:<8} {compilation['kernel'] or '?':<40} "
            f"{counts['mlir']:>5} mlir {counts['internal']:>3} internal {counts['llvm']:>4} llvm"
        )
    print(f"uploaded {body.files} files ({body.length / 1e6:.1f} MB) to {server}", file=sys.stderr)
    print(f"run {summary['run']}: {link}")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    """Run the program with Triton's dumps on, then ingest (or upload) what it wrote as one run.

    The exit status is the program's; when the program succeeded but nothing could be stored, 2."""
    import shlex
    from pathlib import Path

    from app.ingest.capture import discard, run_program, sources_named, text_files
    from app.ingest.dsl_capture import helion_sources, parse_dsls

    command = args.program[1:] if args.program[:1] == ["--"] else args.program
    try:
        dsls = parse_dsls(args.dsl)
    except ValueError as error:
        print(f"irlens: --dsl: {error}", file=sys.stderr)
        return 2
    if not command:
        print("irlens: capture what? give the program after --, e.g. irlens capture -- python train.py",
              file=sys.stderr)
        return 2
    if args.upload and args.db:
        print("irlens: --db and --upload do not go together: store locally or upload", file=sys.stderr)
        return 2
    try:
        captured = run_program(command, llvm=args.llvm, timing=args.timing, profile=args.profile,
                               remarks=args.remarks, dsls=dsls)
    except OSError as error:
        print(f"irlens: cannot run {command[0]}: {error.strerror or error}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126
    captured.sources = sources_named(text_files(captured))
    if "helion" in dsls:  # the Helion files the generated code's `# src[...]` comments name
        found = helion_sources([captured.log] + [Path(p) for p in captured.sources], command)
        captured.sources = sorted(set(captured.sources) | set(found))
    paths = captured.paths
    if captured.interrupted:
        print("irlens: the program was interrupted; storing what it wrote before it stopped", file=sys.stderr)
    if not paths:
        print("irlens: the program wrote no dumps and compiled no kernels: nothing to store", file=sys.stderr)
        discard(captured)
        return captured.returncode or 2
    title = args.title or ("capture: " + shlex.join(command))[:300]
    common = {"title": title, "tag": args.tag, "label": args.label, "json": args.json, "quiet": True, "paths": paths}
    if args.upload:
        status = cmd_upload(argparse.Namespace(
            server=args.upload, token=args.token, listed=args.listed, timeout=args.timeout, **common))
    else:
        status = cmd_ingest(argparse.Namespace(db=args.db, no_compact=args.no_compact,
                                                ends_process=getattr(args, "ends_process", False), **common))
    if status:
        print(f"irlens: the capture is kept in {captured.folder}; store it later with "
              f"`irlens ingest {shlex.join(paths)}`", file=sys.stderr)
        return captured.returncode or status
    discard(captured)
    return captured.returncode


def _labels(args: argparse.Namespace) -> dict[str, str] | None:
    """The --label KEY=VALUE options as a dict; None (after saying why) when one is malformed."""
    from app.store.labels import LabelError, parse_labels

    try:
        return parse_labels(getattr(args, "label", None) or [])
    except LabelError as error:
        print(f"irlens: {error}", file=sys.stderr)
        return None


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    return str(data.get("error") or data.get("detail") or data) if isinstance(data, dict) else str(data)


def add_parser(commands: argparse._SubParsersAction) -> None:
    ingest = commands.add_parser("ingest", help="store dump logs, cache folders and bundles as a run")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or archives")
    ingest.add_argument("--db", help="database URL (default: the IRLENS_DB_URL setting or data/irlens.db)")
    ingest.add_argument("--title", help="a title for the run")
    ingest.add_argument("--tag", action="append", help="a tag for the run (repeatable)")
    ingest.add_argument("--label", action="append", metavar="KEY=VALUE",
                        help="a label for the run, e.g. commit=abc123 (repeatable; triton=VERSION is filled in)")
    ingest.add_argument("--json", action="store_true", help="print the run as one JSON object")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument("--no-compact", action="store_true",
                        help="leave the texts as ingest compressed them (fast, larger); `irlens compact` later")
    ingest.set_defaults(handler=cmd_ingest)

    upload = commands.add_parser("upload", help="send files, folders or archives to an irlens server as a run")
    upload.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or archives")
    upload.add_argument("--server", help="the server's URL, with its base path (default: IRLENS_SERVER)")
    upload.add_argument("--token", help="an API token (default: IRLENS_TOKEN)")
    upload.add_argument("--title", help="a title for the run")
    upload.add_argument("--tag", action="append", help="a tag for the run (repeatable)")
    upload.add_argument("--label", action="append", metavar="KEY=VALUE",
                        help="a label for the run, e.g. commit=abc123 (repeatable; triton=VERSION is filled in)")
    upload.add_argument("--listed", action="store_true", help="list the run on everyone's home page")
    upload.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    upload.add_argument("--quiet", action="store_true", help="no progress bar")
    upload.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the server's answer")
    upload.set_defaults(handler=cmd_upload)

    capture = commands.add_parser(
        "capture", help="run a program with Triton's dumps on, then store its log, cache and sources as a run")
    capture.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                         help="the program and its arguments, after --")
    capture.add_argument("--db", help="database URL (default: the IRLENS_DB_URL setting or data/irlens.db)")
    capture.add_argument("--upload", metavar="URL", help="upload to this irlens server instead (as irlens upload)")
    capture.add_argument("--token", help="with --upload: an API token (default: IRLENS_TOKEN)")
    capture.add_argument("--listed", action="store_true", help="with --upload: list the run on the home page")
    capture.add_argument("--timeout", type=float, default=3600.0, help="with --upload: seconds to wait for the server")
    capture.add_argument("--title", help="a title for the run (default: the command line)")
    capture.add_argument("--tag", action="append", help="a tag for the run (repeatable)")
    capture.add_argument("--label", action="append", metavar="KEY=VALUE",
                        help="a label for the run, e.g. commit=abc123 (repeatable; triton=VERSION is filled in)")
    capture.add_argument("--llvm", action="store_true", help="also dump LLVM IR after every pass (LLVM_IR_ENABLE_DUMP=1)")
    capture.add_argument("--timing", action="store_true", help="also print pass timings (MLIR_ENABLE_TIMING=1)")
    capture.add_argument("--remarks", action="store_true",
                         help="also print the passes' remarks, e.g. why a loop was not pipelined "
                              "(MLIR_ENABLE_DIAGNOSTICS=remarks); shown at their ops")
    capture.add_argument("--profile", action="store_true", help="run under Proton (PC sampling where the GPU allows, "
                         "else its default mode; the log says which) and store the profile with the run")
    capture.add_argument("--dsl", default="all", metavar="LIST",
                         help="the tile DSLs whose dumps to switch on: all (default; each switch acts only when "
                         "its DSL runs), none, or some of helion,cute,cutile,tilelang separated by commas "
                         "(docs/dsl.md)")
    capture.add_argument("--json", action="store_true", help="after the program's output, print the run as JSON")
    capture.add_argument("--no-compact", action="store_true",
                         help="stored locally: leave the texts as ingest compressed them (as irlens ingest)")
    capture.set_defaults(handler=cmd_capture)
