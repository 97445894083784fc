"""The FastAPI app factory. The engine is built per app, so tests can make one per database."""

from __future__ import annotations

import gc
import logging
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.staticfiles import StaticFiles
from sqlalchemy import select
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import render
from app.ingest.disassembler import find_disassembler
from app.insight.precompute import start_map_prep
from app.settings import Settings
from app.store.db import Database
from app.store.models import Run
from app.store.retention import start_retention
from app.urls import Urls
from app.web import warm_pages
from app.web.auth import AuthMiddleware
from app.web.in_flight import InFlightMiddleware
from app.web.page_cache import CachedPageMiddleware
from app.web.responder import STATIC_DIR, http_error, warm_up
from app.web.security import SecurityMiddleware, server_error
from app.web.views import auth as auth_views
from app.web.views import (
    compare,
    compilations,
    diffs,
    files,
    history,
    kernels,
    layout,
    line_map,
    manage,
    meta,
    replay,
    runs,
    snapshots,
    sources,
)
from parsers.inputs.sources import Limits

log = logging.getLogger("irlens")
DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"


def load_demo(db: Database, limits: Limits) -> str | None:
    """Ingest the bundled demo capture into an empty database, so a newcomer sees something."""
    from app.ingest.pipeline import Ingest

    bundles = sorted(DEMO_DIR.glob("*.tar.xz"))
    with db.startup_lock(), db.session() as session:
        if not bundles or session.scalar(select(Run.id).limit(1)) is not None:
            return None
        run = Ingest(session, title="Demo: real Triton captures (NVIDIA sm90, AMD gfx942/gfx1250)",
                     tags=["demo"], limits=limits).ingest(bundles)
        run.listed = True  # on everyone's home page, even when tokens are required
        session.commit()
        log.info("loaded the demo run %s", run.id)
        return run.id


# Allocations between young collections, and the counts that cascade to the older ones (Python's
# defaults: 700, 10, 10). Measured on cold pages of a server with cached pages: -8% server CPU.
GC_THRESHOLDS = (20_000, 50, 100)


def create_served_app(settings: Settings | None = None) -> FastAPI:
    """The app `irlens serve` runs (each worker process builds one): a long-lived process, whose
    start-up objects are frozen out of garbage collection once it is up. Tests, which build many
    apps in one process, use create_app."""
    app = create_app(settings)
    app.state.freeze_gc = True
    return app


def create_app(settings: Settings | None = None, background: bool = True) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        warm_up()
        render.warm_up()
        if app.state.freeze_gc:
            await warm_pages.warm_up(app)  # before the freeze: what it leaves in caches is frozen too
            # What start-up made lives as long as the server: keep it out of the cyclic collector's
            # full passes, which a cold page's many small objects trigger; and collect the young
            # generation less often, so that a page's temporaries die before they are promoted
            # (see bench/NOTES.md).
            gc.collect()
            gc.freeze()
            gc.set_threshold(*GC_THRESHOLDS)
        if settings.load_demo:
            load_demo(app.state.db, app.state.limits)
        retention = start_retention(app.state.db, settings.retention_days)
        # one in-process request (`serve --get`) does no background work
        map_prep = start_map_prep(app.state.db, settings.recompress_level) if background else None
        yield
        if map_prep:
            map_prep.cancel()
        if retention:
            retention.cancel()
        app.state.db.dispose()

    app = FastAPI(title="irlens", lifespan=lifespan, docs_url="/-/docs", redoc_url=None, openapi_url="/-/openapi.json")
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, server_error)
    app.state.settings = settings
    app.state.freeze_gc = False
    app.state.db = settings.database()
    app.state.urls = Urls(settings.base_url)
    app.root_path = app.state.urls.base  # answer at /base/runs/X as well as a proxy-stripped /runs/X
    # Innermost: cached pages are answered before routing, once AuthMiddleware has let the reader in.
    app.add_middleware(CachedPageMiddleware)
    app.add_middleware(AuthMiddleware)
    app.add_middleware(InFlightMiddleware)  # the background rounds wait while pages are being answered
    # Snapshot pages of huge IR are tens of MB of HTML; level 1 costs little and shrinks them ~10x.
    app.add_middleware(GZipMiddleware, minimum_size=2048, compresslevel=1)
    # Outermost of ours: its headers go on every response (a 500 gets them from server_error).
    app.add_middleware(SecurityMiddleware)
    app.state.limits = settings.limits()
    app.state.disassembler = find_disassembler(settings.sass_disassembler)  # looked for once, not per upload
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    for router in (
        meta.router, runs.router, compilations.router, snapshots.router, files.router, line_map.router, sources.router,
        history.router, kernels.router, diffs.router, compare.router, replay.router,
        layout.router, auth_views.router, manage.router,
    ):
        app.include_router(router)
    return app
