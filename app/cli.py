"""The `irlens` command: ingest, serve, and (with --get) one in-process request."""

from __future__ import annotations

import argparse
import json
import sys
import time

from app.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {}
    if getattr(args, "db", None):
        overrides["db_url"] = args.db
    return Settings(**overrides)


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

    from app.db import Database
    from app.ingest import Ingest, IngestError
    from app.queries import run_summary
    from app.urls import Urls
    from parsers.sources import Limits

    settings = _settings(args)
    db = Database(settings.database_url)
    total = sum(os.path.getsize(p) for p in args.paths if os.path.isfile(p)) or None
    bar = ProgressBar(total) if sys.stderr.isatty() and not args.quiet else None
    try:
        with db.session() as session:
            limits = Limits(max_total_bytes=settings.max_expanded_bytes, max_files=settings.max_files)
            ingest = Ingest(session, title=args.title or "", tags=args.tag or [], limits=limits, progress=bar)
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


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.get:
        from fastapi.testclient import TestClient

        from app.main import create_app

        with TestClient(create_app(settings)) as client:
            response = client.get(args.get)
            sys.stdout.write(response.text)
            if not response.text.endswith("\n"):
                sys.stdout.write("\n")
            return 0 if response.status_code < 400 else 1
    import uvicorn

    workers = args.workers or settings.workers
    if workers > 1:
        # Each worker process builds its own app from the same environment.
        import os

        if args.db:
            os.environ["IRLENS_DB_URL"] = args.db
        uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port, workers=workers,
                    proxy_headers=args.proxy_headers, forwarded_allow_ips="*" if args.proxy_headers else None)
    else:
        from app.main import create_app

        uvicorn.run(create_app(settings), host=args.host, port=args.port, proxy_headers=args.proxy_headers,
                    forwarded_allow_ips="*" if args.proxy_headers else None)
    return 0


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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
