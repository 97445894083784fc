"""`irlens serve`: the web app under uvicorn, or with --get one in-process request."""

from __future__ import annotations

import argparse
import sys

from app.cli.common import settings_from


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
    settings = settings_from(args)
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


def add_parser(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="run the web app")
    serve.add_argument("--db", help="database URL")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=None, help="uvicorn worker processes")
    serve.add_argument("--proxy-headers", action="store_true", help="trust X-Forwarded-* headers")
    serve.add_argument("--get", metavar="PATH", help="make one in-process request, print the body and exit")
    serve.set_defaults(handler=cmd_serve)
