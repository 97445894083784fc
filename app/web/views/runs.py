"""Runs: upload, list, and the pages of a run, a compilation and a snapshot."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator

import zstandard
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from sqlalchemy import func, select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException, MultiPartParser

from app.ingest.log_prescan import LogPrescan, upload_path
from app.ingest.pipeline import Ingest, IngestError
from app.insight import precompute
from app.insight.autotune import annotate_variants, run_autotune
from app.insight.comparisons import run_variants
from app.insight.page_data import input_records, recent_runs, run_summary
from app.insight.profile_metrics import run_profiles
from app.store.blobs import ZSTD_CODECS, BlobReader, blob_row
from app.store.labels import LabelError, parse_labels
from app.store.models import Blob, Compilation, InputRecord, Run, Snapshot
from app.urls import Urls
from app.web.auth import identify, upload_owner, visible_runs
from app.web.errors import error_json
from app.web.responder import (
    SessionDep,
    UrlsDep,
    immutable_headers,
    int_param,
    prefers_html,
    respond,
    strip_json,
    templates,
    wants_json,
)
from app.web.run_page import ALIGNED_ROWS, cut_variants, shape_for_html, variant_kernels
from app.web.security import check_csrf
from app.web.views.manage import parse_tags
from app.web.views.sources import link_diagnostics

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


def _upload_failed(request: Request, session, message: str, status: int) -> Response:
    """An upload error: JSON {"error"} for API clients, the home page with the message for a form post."""
    if not prefers_html(request):
        return error_json(message, status)
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
    form = await _read_form(request, settings)
    if isinstance(form, tuple):
        return _upload_failed(request, session, *form)
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
        try:
            labels = parse_labels([str(v) for v in form.getlist("label") + form.getlist("labels")])
        except LabelError as error:
            return _upload_failed(request, session, str(error), 400)
        listed = str(form.get("listed") or "").lower() in ("1", "true", "on", "yes")
        try:
            result = await run_in_threadpool(_ingest, request.app, files, title, owner, tags, listed, labels)
        except IngestError as error:
            # A limit (expanded size, file count, bomb ratio, time) is "too large to process": 413.
            return _upload_failed(request, session, str(error), 413 if error.too_large else 400)
    finally:
        await form.close()
    if prefers_html(request):
        return RedirectResponse(result["url"], status_code=303)
    return JSONResponse(result, status_code=201, headers={"Location": result["url"]})


FIELD_BYTES = 1 << 20  # a form field that is not a file (title, tag): held in memory, so kept small
MAX_FIELDS = 100  # such fields per upload: title, tags, listed, csrf_token
SPOOL_BUDGET = 64 << 20  # file parts of one upload kept in memory, in all; the rest go to temp files


class _UploadTooLarge(Exception):
    pass


async def _bounded_body(request: Request, limit: int) -> AsyncIterator[bytes]:
    """The request body, refused as it streams once it passes `limit` bytes. Checking Content-Length
    is not enough: a chunked upload has none, and Starlette's max_part_size does not bound file parts."""
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise _UploadTooLarge
        yield chunk


class _UploadParser(MultiPartParser):
    """Starlette's multipart parser, with its file parts' memory bounded for the whole upload.

    Each file part stays in memory up to `spool_max_size` (1 MiB) before going to a temp file, so an
    upload of many 1 MiB parts would otherwise sit in memory whole. Past SPOOL_BUDGET, parts go to
    temp files (anonymous ones: nothing is left on disk if the process dies)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._spooled = 0

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        # Starlette internals, read defensively: if they change, parts just spool as Starlette does.
        upload = getattr(getattr(self, "_current_part", None), "file", None)
        if upload is not None and not getattr(upload.file, "_rolled", True):
            self._spooled += end - start
            if self._spooled > SPOOL_BUDGET:
                upload.file.rollover()  # type: ignore[attr-defined]
        super().on_part_data(data, start, end)


async def _read_form(request: Request, settings) -> FormData | tuple[str, int]:
    """The upload's form, or (error message, status) when it is too large or malformed."""
    limit = settings.max_upload_bytes
    too_large = (
        f"upload larger than {limit} bytes ({limit / (1 << 20):,.0f} MiB, the max_upload_bytes setting)",
        413,
    )
    length = request.headers.get("content-length") or "0"
    if not (length.isascii() and length.isdigit()):
        return f"bad Content-Length: {length[:40]!r}", 400
    if int(length) > limit:
        return too_large  # refused before a byte is read
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "multipart/form-data":
        return FormData()  # no files: the caller says so
    parser = _UploadParser(
        request.headers, _bounded_body(request, limit), max_files=settings.max_files, max_fields=MAX_FIELDS,
        max_part_size=FIELD_BYTES,
    )
    try:
        return await parser.parse()
    except _UploadTooLarge:
        return too_large
    except MultiPartException as error:
        return f"malformed upload: {error.message}", 400
    except OSError as error:  # out of disk or descriptors for the parts' temp files
        return f"the server could not hold this upload's parts ({error.strerror}): send fewer files, or an archive", 413


def _ingest(app, files, title: str, owner: str | None = None, tags=(), listed: bool = False,
            labels: dict | None = None) -> dict:
    # Large plain logs are scanned and hashed by a helper process (their op terms by another one),
    # which leaves this process's interpreter to the pages it serves meanwhile.
    inputs = [(name, stream, upload_path(stream)) for name, stream in files]
    prescan = LogPrescan.start([path for _, _, path in inputs if path])
    try:
        with app.state.db.session() as session:
            run = Ingest(session, title=title, owner=owner, tags=tags, labels=labels, limits=app.state.limits,
                         disassembler=app.state.disassembler, prescan=prescan).ingest(inputs)
            run.listed = listed
            session.commit()
            precompute.wake()  # its map pages' indexes, in the background
            return run_summary(session, run, app.state.urls)
    finally:
        if prescan is not None:
            prescan.close()


LOG_EXCERPT_LINES = 200
LOG_EXCERPT_SCAN = 1 << 20  # decompressed bytes read at most to find them
LOG_EXCERPTS = 20  # logs shown inline on the run page; the rest by link


def _log_chunks(blob: Blob, size: int = 1 << 16) -> Iterator[bytes]:
    """A stored log text, decompressed as it streams (log texts are zstd frames without a size)."""
    if blob.codec not in ZSTD_CODECS:
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


LOG_HEAD_BYTES = 1 << 20  # compressed bytes read for an excerpt: a big log's stored text runs to 100s of MB


def _log_head(session, digest: str) -> Blob | None:
    """The blob with only the start of its compressed data when it is a streamed zstd log text of its
    own (the excerpt reads no further), so a big log costs the page no more than a small one."""
    row = session.execute(select(Blob.id, Blob.codec, Blob.size, Blob.pack_id, func.length(Blob.data))
                          .where(Blob.hash == digest)).first()
    if row is None:
        return None
    rowid, codec, size, pack_id, length = row
    if codec not in ZSTD_CODECS or pack_id is not None or (length or 0) <= LOG_HEAD_BYTES:
        return blob_row(session, digest)
    raw = session.connection().connection.driver_connection
    if hasattr(raw, "blobopen"):  # SQLite: read the head alone (substr would load the whole value)
        with raw.blobopen("blobs", "data", rowid, readonly=True) as stored:
            head = stored.read(LOG_HEAD_BYTES)
    else:
        head = session.scalar(select(func.substr(Blob.data, 1, LOG_HEAD_BYTES)).where(Blob.id == rowid))
    return Blob(hash=digest, size=size, codec=codec, data=bytes(head or b""))


def _log_excerpt(blob: Blob) -> dict:
    """The first lines of a log's text, with runs of blank lines (where dumps were) folded into one.

    Reads no more than LOG_EXCERPT_SCAN bytes, so a huge log costs no more than a small one.
    """
    shown: list[str] = []
    scanned = 0
    truncated = folded = False
    blank_before = False
    lines = _log_lines(blob)
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            break
        except zstandard.ZstdError:  # the end of a big text's head (_log_head): what came is shown
            truncated = True
            break
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
    html = not wants_json(request)
    data = run_summary(session, run, urls, warnings=not html)  # the page groups its warnings itself
    data["autotune"] = run_autotune(session, run, urls)
    shown = None
    if html:  # the page shows a few kernels' Variants in full and lists the others
        shown, data["more_variants"] = variant_kernels(data["compilations"], data["autotune"], urls, run.id)
    # kernels compiled more than once (autotune configs); the page aligns the rows it shows in full
    data["variants"] = run_variants(session, run, urls, shown, ALIGNED_ROWS if shown is not None else None)
    if html:
        cut_variants(data["variants"], data["autotune"])
    annotate_variants(session, run, data["variants"], data["autotune"])
    data["profiles"] = run_profiles(session, run.id, urls)
    link_diagnostics(session, run.id, data["diagnostics"] + data["compilation_diagnostics"], urls)
    if not wants_json(request):
        # A page of compilations, warnings grouped, long Variants cut: the JSON keeps every row.
        shape_for_html(session, data, urls, request.query_params.get("page"))
        # Inline excerpts of the logs' non-IR text; the JSON gives their URLs instead.
        text_blobs = {
            record.pk: record.log_blob for record in input_records(session, run.id) if record.log_blob
        }
        excerpts = {}
        for record_pk, digest in list(text_blobs.items())[:LOG_EXCERPTS]:
            blob = _log_head(session, digest)
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
    blob = blob_row(session, record.log_blob)
    if blob is None:
        raise HTTPException(404, "no such log")
    return StreamingResponse(
        _log_chunks(blob), media_type="text/plain; charset=utf-8", headers=immutable_headers(record.log_blob)
    )



__all__ = ["PlainTextResponse", "router"]
