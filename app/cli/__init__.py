"""The `irlens` command: ingest, serve (with --get: one in-process request), tokens, db, gc, delete, upload,
capture.

The top of the house: it may import every room (store, ingest, insight, web); nothing imports it.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported late at run time, so `irlens --help` stays fast
    import httpx

    from app.settings import Settings
    from app.store.db import Database


def _settings(args: argparse.Namespace) -> Settings:
    # pydantic-settings costs a tenth of a second: imported by the commands that read settings only
    from app.settings import Settings

    overrides = {}
    if getattr(args, "db", None):
        overrides["db_url"] = args.db
    return Settings(**overrides)


@contextmanager
def _collector_paused(freeze: bool = False) -> Iterator[None]:
    """Imports make ~80,000 objects that live as long as the process, and next to no garbage: with
    the cyclic collector on, it walks them again and again while they are made (0.05-0.1 s of an
    ingest's 0.45 s of imports). Paused meanwhile, then back as it was. ``freeze``: in a process that
    ends with the command, they are also moved out of the collector's sight for good, so that the
    full collections during the command do not walk them either."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


class ProgressBar:
    """Bytes read so far and the rate, redrawn at most 10 times a second on a terminal."""

    def __init__(self, total: int | None) -> None:
        self.total, self.start, self.last = total, time.monotonic(), 0.0

    def __call__(self, _name: str, done: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-6) / 1e6
        if self.total:
            share = min(done / self.total, 1.0)
            bar = "#" * int(share * 30)
            line = f"\r[{bar:<30}] {share:6.1%} {done / 1e6:9.1f} MB {rate:7.1f} MB/s"
        else:
            line = f"\r{done / 1e6:9.1f} MB read {rate:7.1f} MB/s"
        sys.stderr.write(line)
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


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

    with _collector_paused(freeze=getattr(args, "ends_process", False)):
        from app.ingest.disassembler import find_disassembler
        from app.ingest.pipeline import Ingest, IngestError
        from app.insight.page_data import run_summary
        from app.urls import Urls

        settings = _settings(args)
    db = settings.database()
    total = sum(os.path.getsize(p) for p in args.paths if os.path.isfile(p)) or None
    bar = ProgressBar(total) if sys.stderr.isatty() and not args.quiet else None
    try:
        with db.session() as session:
            ingest = Ingest(
                session, title=args.title or "", tags=args.tag or [], limits=settings.limits(), progress=bar,
                disassembler=find_disassembler(settings.sass_disassembler), prescan=prescan,
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
        print(f"run {summary['run']}: {summary['url']}")
    return 0


def _raise_open_file_limit() -> None:
    """Up to the hard limit: an upload of many files spools its parts past 64 MiB to temp files, each an
    open descriptor until the ingest ends, and the default soft limit (often 1024) is soon reached."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _log_config() -> dict:
    """uvicorn's logging, plus the "irlens" logger (deletions, retention, tokens, schema upgrades) at INFO.

    Given to uvicorn so that every worker process sets it up too."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["irlens"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


async def _get_once(app, path: str) -> tuple[int, str]:
    """One request to the app in this process, inside its lifespan (start-up and shutdown run as
    under uvicorn). httpx's ASGI transport, not Starlette's TestClient: that is a test tool, and
    Starlette deprecates it on httpx."""
    import httpx

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.get(path)
    return response.status_code, response.text


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.get:
        import asyncio

        from app.web.app import create_app

        status, text = asyncio.run(_get_once(create_app(settings, background=False), args.get))
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        return 0 if status < 400 else 1
    import uvicorn

    _raise_open_file_limit()
    workers = args.workers or settings.workers
    if workers > 1:
        # Each worker process builds its own app from the same environment; a missing database
        # driver is told here once, not as a traceback per worker.
        import os

        from app.store.db import make_engine

        make_engine(settings.database_url).dispose()

        if args.db:
            os.environ["IRLENS_DB_URL"] = args.db
        uvicorn.run("app.web.app:create_served_app", factory=True, host=args.host, port=args.port, workers=workers,
                    proxy_headers=args.proxy_headers, forwarded_allow_ips=settings.forwarded_allow_ips if args.proxy_headers else None,
                    log_config=_log_config())
    else:
        from app.web.app import create_served_app

        uvicorn.run(create_served_app(settings), host=args.host, port=args.port, proxy_headers=args.proxy_headers,
                    forwarded_allow_ips=settings.forwarded_allow_ips if args.proxy_headers else None, log_config=_log_config())
    return 0


# -- teams: tokens, schema, deleting and retention, uploading to a server ------------------------------


def _database(args: argparse.Namespace) -> Database:
    return _settings(args).database()


def cmd_token(args: argparse.Namespace) -> int:
    from app.web.auth import create_token, list_tokens, revoke_token

    db = _database(args)
    try:
        with db.session() as session:
            if args.token_command == "create":
                try:
                    token = create_token(session, args.name)
                except ValueError as error:
                    print(f"irlens: {error}", file=sys.stderr)
                    return 1
                session.commit()
                print(f"created the API token {args.name!r}; it is shown once, keep it secret:")
                print(token)  # the last line of the output: `irlens token create me | tail -1`
            elif args.token_command == "list":
                for token in list_tokens(session):
                    created = token.created_at.isoformat(timespec="seconds") if token.created_at else ""
                    print(f"{token.name}\t{created}")
            elif not revoke_token(session, args.name):
                print(f"irlens: no token named {args.name!r}", file=sys.stderr)
                return 1
            else:
                session.commit()
                print(f"revoked the API token {args.name!r}")
    finally:
        db.dispose()
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    from app.store.db import make_engine, upgrade_schema

    engine = make_engine(_settings(args).database_url)
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

    settings = _settings(args)
    days = args.days if args.days is not None else settings.retention_days
    db = _database(args)
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
    from app.insight import precompute as map_prep
    from app.insight.op_index import backfill, index_run
    from app.store.models import Run

    if not args.backfill and not args.runs:
        print("irlens: say --backfill (every run not indexed yet) or name runs to re-index", file=sys.stderr)
        return 2
    db = _database(args)
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
            map_prep.prepare_run(db, run_id)  # and its map pages' Python-line indexes
            progress(number, len(args.runs), run_id)
        count = backfill(db.session, progress) if args.backfill else 0
        if args.backfill:
            map_prep.prepare_pending(db)
    finally:
        db.dispose()
    print(f"op index: {len(args.runs) + count} runs indexed")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from app.store.compaction import compact_pending

    level = args.level if args.level is not None else _settings(args).recompress_level
    db = _database(args)
    try:
        done = compact_pending(db.session, level)
    finally:
        db.dispose()
    print(f"compacted {done.blobs} stored frames at zstd level {level}: "
          f"{done.bytes_before:,} -> {done.bytes_after:,} bytes")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from app.store.retention import delete_run

    db = _database(args)
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


Segment = bytes | tuple[str, int]  # literal bytes, or (a local file, its size) read as it streams


def _tar_segments(folder: str) -> list[Segment]:
    """A folder as a tar archive, built as it streams (its length known up front): members are named
    FOLDER/relative/path, so the server sees the same tree `irlens ingest FOLDER` would."""
    import os
    import tarfile

    root = os.path.abspath(folder)
    top = os.path.basename(root.rstrip(os.sep)) or "upload"
    segments: list[Segment] = []
    for parent, subfolders, names in os.walk(root):
        subfolders.sort()
        for name in sorted(names):
            local = os.path.join(parent, name)
            if os.path.islink(local) or not os.path.isfile(local):
                continue
            info = os.stat(local)
            member = tarfile.TarInfo(f"{top}/{os.path.relpath(local, root).replace(os.sep, '/')}")
            member.size, member.mtime, member.mode = info.st_size, int(info.st_mtime), 0o644
            segments.append(member.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            segments.append((local, info.st_size))
            if info.st_size % tarfile.BLOCKSIZE:
                segments.append(b"\0" * (tarfile.BLOCKSIZE - info.st_size % tarfile.BLOCKSIZE))
    segments.append(b"\0" * (2 * tarfile.BLOCKSIZE))  # the end-of-archive marker
    return segments


class MultipartUpload:
    """A multipart/form-data body streamed from the files (never read whole), with a known length.

    Files go as they are; a folder goes as a tar archive made on the fly (`FOLDER.tar`).
    """

    CHUNK = 1 << 20

    def __init__(self, fields: list[tuple[str, str]], paths: list[str]) -> None:
        import os
        import secrets

        self.boundary = "irlens-" + secrets.token_hex(16)
        self.parts: list[tuple[bytes, list[Segment]]] = []
        self.files = 0
        for name, value in fields:
            self.parts.append((self._head(name), [value.encode("utf-8")]))
        for path in paths:
            if os.path.isdir(path):
                segments = _tar_segments(path)
                self.files += sum(1 for segment in segments if isinstance(segment, tuple))
                name = (os.path.basename(os.path.abspath(path).rstrip(os.sep)) or "upload") + ".tar"
                self.parts.append((self._head("file", name), segments))
            elif os.path.isfile(path):
                self.files += 1
                self.parts.append((self._head("file", os.path.basename(path)), [(path, os.path.getsize(path))]))
            else:
                raise FileNotFoundError(f"no such file or folder: {path}")
        self.tail = f"--{self.boundary}--\r\n".encode("ascii")
        self.length = len(self.tail) + sum(
            len(head) + 2 + sum(len(s) if isinstance(s, bytes) else s[1] for s in segments)
            for head, segments in self.parts
        )
        self.sent = 0

    def _head(self, name: str, filename: str | None = None) -> bytes:
        def quoted(text: str) -> str:  # as browsers do it
            return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")

        disposition = f'form-data; name="{quoted(name)}"'
        lines = [f"--{self.boundary}"]
        if filename is None:
            lines.append(f"Content-Disposition: {disposition}")
        else:
            lines += [
                f'Content-Disposition: {disposition}; filename="{quoted(filename)}"',
                "Content-Type: application/octet-stream",
            ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def stream(self, progress: Callable[[str, int], None] | None = None) -> Iterator[bytes]:
        for head, segments in self.parts:
            yield self._count(head, progress)
            for segment in segments:
                if isinstance(segment, bytes):
                    yield self._count(segment, progress)
                    continue
                path, size = segment
                with open(path, "rb") as source:
                    left = size
                    while left > 0:
                        block = source.read(min(self.CHUNK, left))
                        if not block:
                            raise OSError(f"{path} shrank while it was being uploaded")
                        left -= len(block)
                        yield self._count(block, progress)
            yield self._count(b"\r\n", progress)
        yield self._count(self.tail, progress)

    def _count(self, data: bytes, progress: Callable[[str, int], None] | None) -> bytes:
        self.sent += len(data)
        if progress:
            progress("", self.sent)
        return data


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
    fields = [("title", args.title or "")] + [("tag", tag) for tag in args.tag or []]
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

    from app.ingest.capture import discard, run_program, sources_named, text_files

    command = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not command:
        print("irlens: capture what? give the program after --, e.g. irlens capture -- python train.py",
              file=sys.stderr)
        return 2
    if args.upload and args.db:
        print("irlens: --db and --upload do not go together: store locally or upload", file=sys.stderr)
        return 2
    try:
        captured = run_program(command, llvm=args.llvm, timing=args.timing, profile=args.profile)
    except OSError as error:
        print(f"irlens: cannot run {command[0]}: {error.strerror or error}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126
    captured.sources = sources_named(text_files(captured))
    paths = captured.paths
    if captured.interrupted:
        print("irlens: the program was interrupted; storing what it wrote before it stopped", file=sys.stderr)
    if not paths:
        print("irlens: the program wrote no dumps and compiled no kernels: nothing to store", file=sys.stderr)
        discard(captured)
        return captured.returncode or 2
    title = args.title or ("capture: " + shlex.join(command))[:300]
    common = {"title": title, "tag": args.tag, "json": args.json, "quiet": True, "paths": paths}
    if args.upload:
        status = cmd_upload(argparse.Namespace(
            server=args.upload, token=args.token, listed=args.listed, timeout=args.timeout, **common))
    else:
        status = cmd_ingest(argparse.Namespace(db=args.db, ends_process=getattr(args, "ends_process", False), **common))
    if status:
        print(f"irlens: the capture is kept in {captured.folder}; store it later with "
              f"`irlens ingest {shlex.join(paths)}`", file=sys.stderr)
        return captured.returncode or status
    discard(captured)
    return captured.returncode


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    return str(data.get("error") or data.get("detail") or data) if isinstance(data, dict) else str(data)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irlens", description="Triton IR dumps, pass by pass, in the browser.")
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="store dump logs, cache folders and bundles as a run")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or archives")
    ingest.add_argument("--db", help="database URL (default: the IRLENS_DB_URL setting or data/irlens.db)")
    ingest.add_argument("--title", help="a title for the run")
    ingest.add_argument("--tag", action="append", help="a tag for the run (repeatable)")
    ingest.add_argument("--json", action="store_true", help="print the run as one JSON object")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(handler=cmd_ingest)

    serve = commands.add_parser("serve", help="run the web app")
    serve.add_argument("--db", help="database URL")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=None, help="uvicorn worker processes")
    serve.add_argument("--proxy-headers", action="store_true", help="trust X-Forwarded-* headers")
    serve.add_argument("--get", metavar="PATH", help="make one in-process request, print the body and exit")
    serve.set_defaults(handler=cmd_serve)

    token = commands.add_parser("token", help="API tokens: create, list, revoke")
    token_commands = token.add_subparsers(dest="token_command", required=True)
    for name, text in (("create", "make a token for NAME; its last output line is the token"),
                       ("list", "list the tokens' names"),
                       ("revoke", "delete the token NAME (its sign-ins end too)")):
        sub = token_commands.add_parser(name, help=text)
        if name != "list":
            sub.add_argument("name", metavar="NAME", help="who uploads with it (recorded as the runs' owner)")
        sub.add_argument("--db", help="database URL")
    token.set_defaults(handler=cmd_token)

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

    upload = commands.add_parser("upload", help="send files, folders or archives to an irlens server as a run")
    upload.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or archives")
    upload.add_argument("--server", help="the server's URL, with its base path (default: IRLENS_SERVER)")
    upload.add_argument("--token", help="an API token (default: IRLENS_TOKEN)")
    upload.add_argument("--title", help="a title for the run")
    upload.add_argument("--tag", action="append", help="a tag for the run (repeatable)")
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
    capture.add_argument("--llvm", action="store_true", help="also dump LLVM IR after every pass (LLVM_IR_ENABLE_DUMP=1)")
    capture.add_argument("--timing", action="store_true", help="also print pass timings (MLIR_ENABLE_TIMING=1)")
    capture.add_argument("--profile", action="store_true", help="run under Proton (PC sampling where the GPU allows, "
                         "else its default mode; the log says which) and store the profile with the run")
    capture.add_argument("--json", action="store_true", help="after the program's output, print the run as JSON")
    capture.set_defaults(handler=cmd_capture)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; ``argv`` None: this process's own (`irlens ...`, `python -m app.cli ...`),
    which ends when the command returns."""
    args = build_parser().parse_args(argv)
    args.ends_process = argv is None
    try:
        code = args.handler(args)
        if argv is None:
            # The process exits next: Python's exit would run the cyclic collector over every object
            # still alive (SQLAlchemy's, the ingest's: 0.1-0.2 s after an ingest) only to free memory
            # the OS takes back anyway. Frozen objects are left out of that walk. Called in process
            # (tests, with argv), the collector is left alone.
            gc.freeze()
        return code
    except RuntimeError as error:
        from app.store.db import DriverMissing  # late, like every command's imports

        if not isinstance(error, DriverMissing):
            raise
        print(f"irlens: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
