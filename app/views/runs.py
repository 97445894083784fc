"""Runs: upload, list, and the pages of a run, a compilation and a snapshot."""

from __future__ import annotations

import io
from collections.abc import Iterator

import zstandard
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from app.auth import identify, upload_owner, visible_runs
from app.blobs import BlobReader
from app.ingest import Ingest, IngestError
from app.models import Blob, Compilation, InputRecord, Run, Snapshot
from app.queries import input_records, recent_runs, run_summary
from app.security import check_csrf
from app.urls import Urls
from app.views.manage import parse_tags
from app.web import (
    SessionDep,
    UrlsDep,
    immutable_headers,
    int_param,
    respond,
    strip_json,
    templates,
    wants_json,
)

router = APIRouter()
blob_reader = BlobReader()


def load_run(session, run_id: str) -> Run:
    run = session.get(Run, strip_json(run_id))
    if run is None:
        raise HTTPException(404, "no such run")
    return run


def load_compilation(session, run_id: str, ordinal: str) -> Compilation:
    compilation = session.scalar(
        select(Compilation).where(Compilation.run_id == strip_json(run_id), Compilation.ordinal == int_param(ordinal))
    )
    if compilation is None:
        raise HTTPException(404, "no such compilation")
    return compilation


def load_snapshot(session, compilation: Compilation, index: str) -> Snapshot:
    snapshot = session.scalar(
        select(Snapshot).where(Snapshot.compilation_pk == compilation.pk, Snapshot.index == int_param(index))
    )
    if snapshot is None:
        raise HTTPException(404, "no such snapshot")
    return snapshot


@router.get("/")
@router.get("/index.json")
def home(request: Request, session: SessionDep, urls: UrlsDep):
    return respond(request, "home.html", _home_data(request, session, urls))


def _home_data(request: Request, session, urls: Urls) -> dict:
    settings = request.app.state.settings
    visible = visible_runs(identify(request), settings)  # the reader's own runs and listed ones
    return {"runs": recent_runs(session, urls, visible=visible), "max_upload_bytes": settings.max_upload_bytes}


def _prefers_html(request: Request) -> bool:
    """A plain browser form post (no JavaScript): answer with a redirect, not JSON.

    XHR, htmx and curl calls get JSON; so does any Accept that does not rank text/html
    above application/json (curl's `*/*` ranks them equal).
    """
    headers = request.headers
    if headers.get("hx-request") or headers.get("x-requested-with", "").lower() == "xmlhttprequest":
        return False
    if headers.get("user-agent", "").lower().startswith("curl/"):
        return False
    ranks = _accept_ranks(headers.get("accept", ""))
    return _quality(ranks, "text/html") > _quality(ranks, "application/json")


def _accept_ranks(accept: str) -> list[tuple[str, float]]:
    ranks = []
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        if not media:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        ranks.append((media.lower(), quality))
    return ranks


def _quality(ranks: list[tuple[str, float]], media: str) -> float:
    """The q of the most specific range matching `media` (exact, then type/*, then */*)."""
    kind = media.split("/")[0]
    for candidate in (media, f"{kind}/*", "*/*"):
        for range_, quality in ranks:
            if range_ == candidate:
                return quality
    return 0.0


def _upload_failed(request: Request, session, message: str, status: int) -> Response:
    """An upload error: JSON {"error"} for API clients, the home page with the message for a form post."""
    if not _prefers_html(request):
        return JSONResponse({"error": message}, status_code=status)
    urls: Urls = request.app.state.urls
    data = _home_data(request, session, urls)
    data["error"] = message
    return templates.TemplateResponse(
        request,
        "home.html",
        {"data": data, "urls": urls, "json_url": urls.path("/index.json"), "settings": request.app.state.settings},
        status_code=status,
    )


@router.post("/runs")
async def upload(request: Request, session: SessionDep):
    settings = request.app.state.settings
    try:
        owner = await upload_owner(request)  # before reading the body: 401 when a token is required
    except HTTPException as refused:
        return _upload_failed(request, session, str(refused.detail), refused.status_code)
    length = int(request.headers.get("content-length") or 0)
    if length > settings.max_upload_bytes:
        limit = f"{settings.max_upload_bytes / (1 << 20):,.0f} MiB"
        return _upload_failed(request, session, f"upload larger than {settings.max_upload_bytes} bytes ({limit})", 413)
    form = await request.form(max_files=settings.max_files, max_part_size=settings.max_upload_bytes)
    try:
        try:
            check_csrf(request, form)
        except HTTPException as refused:
            return _upload_failed(request, session, str(refused.detail), refused.status_code)
        files = [
            (item.filename or "upload", item.file)
            for item in form.getlist("file")
            if hasattr(item, "file") and (item.filename or item.size)
        ]
        if not files:
            return _upload_failed(
                request, session, "no files: choose or drop at least one file (multipart field 'file')", 400
            )
        title = str(form.get("title") or "").strip()
        tags = parse_tags(form.getlist("tag") + form.getlist("tags"))
        listed = str(form.get("listed") or "").lower() in ("1", "true", "on", "yes")
        try:
            result = await run_in_threadpool(_ingest, request.app, files, title, owner, tags, listed)
        except IngestError as error:
            return _upload_failed(request, session, str(error), 400)
    finally:
        await form.close()
    if _prefers_html(request):
        return RedirectResponse(result["url"], status_code=303)
    return JSONResponse(result, status_code=201, headers={"Location": result["url"]})


def _ingest(app, files, title: str, owner: str | None = None, tags=(), listed: bool = False) -> dict:
    with app.state.db.session() as session:
        run = Ingest(session, title=title, owner=owner, tags=tags, limits=app.state.limits).ingest(files)
        run.listed = listed
        session.commit()
        return run_summary(session, run, app.state.urls)


LOG_EXCERPT_LINES = 200
LOG_EXCERPT_SCAN = 1 << 20  # decompressed bytes read at most to find them
LOG_EXCERPTS = 20  # logs shown inline on the run page; the rest by link


def _log_chunks(blob: Blob, size: int = 1 << 16) -> Iterator[bytes]:
    """A stored log text, decompressed as it streams (log texts are zstd frames without a size)."""
    if blob.codec != "zstd":
        yield blob.data
        return
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob.data), read_across_frames=True)
    while chunk := reader.read(size):
        yield chunk


def _log_lines(blob: Blob) -> Iterator[bytes]:
    pending = b""
    for chunk in _log_chunks(blob):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        yield from lines
        if len(pending) > LOG_EXCERPT_SCAN:  # one endless line: hand it over as it is
            yield pending
            pending = b""
    if pending:
        yield pending


def _log_excerpt(blob: Blob) -> dict:
    """The first lines of a log's text, with runs of blank lines (where dumps were) folded into one.

    Reads no more than LOG_EXCERPT_SCAN bytes, so a huge log costs no more than a small one.
    """
    shown: list[str] = []
    scanned = 0
    truncated = folded = False
    blank_before = False
    for raw in _log_lines(blob):
        scanned += len(raw) + 1
        if scanned > LOG_EXCERPT_SCAN:
            truncated = True
            break
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not line.strip():
            folded = folded or blank_before or not shown
            blank_before = bool(shown)
            continue
        if len(shown) >= LOG_EXCERPT_LINES:
            truncated = True
            break
        if blank_before:
            shown.append("")
            blank_before = False
        shown.append(line)
    return {"text": "\n".join(shown), "lines": len(shown), "bytes": blob.size, "truncated": truncated,
            "folded": folded}


@router.get("/runs/{run_id}")
def run_page(request: Request, run_id: str, session: SessionDep, urls: UrlsDep):
    run = load_run(session, run_id)
    data = run_summary(session, run, urls)
    if not wants_json(request):
        # Inline excerpts of the logs' non-IR text; the JSON gives their URLs instead.
        text_blobs = {
            record.pk: record.log_blob for record in input_records(session, run.id) if record.log_blob
        }
        excerpts = {}
        for record_pk, digest in list(text_blobs.items())[:LOG_EXCERPTS]:
            blob = session.get(Blob, digest)
            if blob is not None:
                excerpts[record_pk] = _log_excerpt(blob)
        data["log_excerpts"] = excerpts
    return respond(request, "run.html", data)


@router.get("/runs/{run_id}/log/{input_pk}")
def run_log(run_id: str, input_pk: str, session: SessionDep):
    """One uploaded log's non-IR lines (warnings, tracebacks, timing reports), as stored."""
    run = load_run(session, run_id)
    record = session.get(InputRecord, int_param(input_pk))
    if record is None or record.run_id != run.id or record.log_blob is None:
        raise HTTPException(404, "no such log")
    blob = session.get(Blob, record.log_blob)
    if blob is None:
        raise HTTPException(404, "no such log")
    return StreamingResponse(
        _log_chunks(blob), media_type="text/plain; charset=utf-8", headers=immutable_headers(record.log_blob)
    )



__all__ = ["PlainTextResponse", "router"]
