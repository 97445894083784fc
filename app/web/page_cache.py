"""Finished responses of pages that never change, kept per app process.

A snapshot, file or diff page is a function of its blobs, the URL (path and query), whether htmx
asked for a fragment, and who is signed in (the top bar names them); the code cannot change under
a running process, so its version is no part of the key. All of that is immutable once a run is
ingested, but for run titles, which a diff page shows and an owner may edit: an entry notes the
titles it was made with and is used only while they stand. So the encoded body, and a gzipped
copy, are kept in an LRU bounded by bytes, and a repeat request costs one lookup of the runs it
shows (they must still exist: a deleted run's pages are 404) instead of a render, a template and
a compression.

That lookup is half the cost of a cached page, so its answer is trusted for RECHECK_SECONDS. A
change made through this process (`forget_runs`) shows at once; one made through another worker
process shows within that time.

`CachedPageMiddleware` answers a GET for a cached page before routing: on the event loop, with no
database session and no thread pool hops (a sync view costs three: the session's dependency in and
out, and the view). Under 32 clients that halves the server's CPU per cached page. What it cannot
answer (a miss, a retitled or deleted run) goes on to the view, which does the same lookup.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from fastapi import HTTPException, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from app import render
from app.store import retention
from app.store.models import Run

PAGE_CACHE_BYTES = 256 << 20
RECHECK_SECONDS = 1.0

# run ids -> (their titles, when read): the lookups of the last RECHECK_SECONDS, per process.
_checked: dict[tuple[str, ...], tuple[dict[str, str], float]] = {}
_checked_lock = threading.Lock()


@dataclass(frozen=True)
class CachedPage:
    runs: dict[str, str]  # run id -> its title when the page was made
    etag: str | None
    headers: dict[str, str]
    body: bytes
    gzipped: bytes | None


def page_cache(request: Request) -> render.SizedLRU:
    state = request.app.state
    cache = getattr(state, "page_cache", None)
    if cache is None:
        cache = state.page_cache = render.SizedLRU(max_bytes=PAGE_CACHE_BYTES, max_items=100_000)
    return cache


def _page_key(request: Request) -> tuple:
    identity = getattr(request.state, "identity", None)
    return (
        request.url.path,
        request.url.query,
        request.headers.get("hx-request") == "true",
        getattr(identity, "name", None),
    )


def _accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "")


def _serve(request: Request, entry: CachedPage) -> Response:
    if entry.etag is not None and render.not_modified(request.headers.get("if-none-match"), entry.etag):
        return Response(status_code=304, headers=render.cache_headers(entry.etag))
    headers = dict(entry.headers)
    if entry.gzipped is not None:
        headers["vary"] = "HX-Request, Accept-Encoding"
        if _accepts_gzip(request):
            headers["content-encoding"] = "gzip"  # GZipMiddleware leaves encoded responses alone
            return Response(entry.gzipped, headers=headers)
    return Response(entry.body, headers=headers)


def cached_response(request: Request, session: Session) -> Response | None:
    """The cached response for this request, or None; 404 when a run it shows has been deleted."""
    entry = page_cache(request).get(_page_key(request))
    if entry is None:
        return None
    titles = _current_titles(session, tuple(entry.runs))
    if len(titles) < len(entry.runs):
        raise HTTPException(404, "no such run")
    if titles != entry.runs:
        return None  # retitled since: render again (the new page replaces this entry)
    return _serve(request, entry)


def _recent_titles(run_ids: tuple[str, ...]) -> dict[str, str] | None:
    """The runs' titles if they were looked up in the last RECHECK_SECONDS, else None."""
    with _checked_lock:
        known = _checked.get(run_ids)
    if known is not None and time.monotonic() - known[1] < RECHECK_SECONDS:
        return known[0]
    return None


def _current_titles(session: Session, run_ids: tuple[str, ...]) -> dict[str, str]:
    known = _recent_titles(run_ids)
    if known is not None:
        return known
    now = time.monotonic()
    titles = _titles(session, run_ids)
    with _checked_lock:
        if len(_checked) > 10_000:
            _checked.clear()
        _checked[run_ids] = (titles, now)
    return titles


def forget_runs(*run_ids: str) -> None:
    """Runs retitled or deleted here: their cached pages are checked again at the next request."""
    with _checked_lock:
        for key in [key for key in _checked if set(key) & set(run_ids)]:
            del _checked[key]


retention.on_run_deleted(forget_runs)


def _titles(session: Session, run_ids: Iterable[str]) -> dict[str, str]:
    rows = session.execute(select(Run.id, Run.title).where(Run.id.in_(list(run_ids)))).all()
    return {run_id: title or "" for run_id, title in rows}


def cache_response(
    request: Request, session: Session, run_ids: str | tuple[str, ...], response: Response
) -> Response:
    """Keep a freshly built 200 response for the next request, and serve it from the cache's copy."""
    body = getattr(response, "body", None)
    if response.status_code != 200 or not isinstance(body, bytes):
        return response
    headers = {
        key: value for key, value in response.headers.items() if key not in ("content-length", "content-encoding")
    }
    level = 6 if len(body) < (4 << 20) else 1
    gzipped = gzip.compress(body, compresslevel=level, mtime=0) if len(body) >= 2048 else None
    runs = _titles(session, (run_ids,) if isinstance(run_ids, str) else set(run_ids))
    entry = CachedPage(runs, headers.get("etag"), headers, body, gzipped)
    page_cache(request).put(_page_key(request), entry, len(body) + len(gzipped or b"") + 512)
    return _serve(request, entry)


class CachedPageMiddleware:
    """Serves a GET whose page is cached without routing it (see the module's docstring).

    Sits inside AuthMiddleware, so the identity that keys an entry is known, and a reader who may
    not read is turned away before this runs; everything outside it (security headers, gzip of
    what is not yet compressed) applies to these responses as to the view's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            request = Request(scope, receive)
            entry = page_cache(request).get(_page_key(request))
            if entry is not None:
                run_ids = tuple(entry.runs)
                titles = _recent_titles(run_ids)
                if titles is None:
                    titles = await run_in_threadpool(self._look_up, request, run_ids)
                if titles == entry.runs:
                    await _serve(request, entry)(scope, receive, send)
                    return
        # a miss, or a run retitled or deleted since: the view decides (a 404, or a new page)
        await self.app(scope, receive, send)

    @staticmethod
    def _look_up(request: Request, run_ids: tuple[str, ...]) -> dict[str, str]:
        with request.app.state.db.session() as session:
            return _current_titles(session, run_ids)
