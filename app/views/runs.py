"""Runs: upload, list, and the pages of a run, a compilation and a snapshot."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from app.blobs import BlobReader
from app.ingest import Ingest, IngestError
from app.models import Artifact, Compilation, Run, Snapshot
from app.queries import compilation_detail, recent_runs, run_summary, snapshot_dict
from app.web import SessionDep, UrlsDep, int_param, respond, strip_json

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
    return respond(request, "home.html", {"runs": recent_runs(session, urls)})


@router.post("/runs")
async def upload(request: Request):
    settings = request.app.state.settings
    length = int(request.headers.get("content-length") or 0)
    if length > settings.max_upload_bytes:
        return JSONResponse({"error": f"upload larger than {settings.max_upload_bytes} bytes"}, status_code=413)
    form = await request.form(max_files=settings.max_files, max_part_size=settings.max_upload_bytes)
    files = [(item.filename or "upload", item.file) for item in form.getlist("file") if hasattr(item, "file")]
    if not files:
        return JSONResponse({"error": "no files: send them as multipart field 'file'"}, status_code=400)
    title = str(form.get("title") or "")
    try:
        result = await run_in_threadpool(_ingest, request.app, files, title)
    except IngestError as error:
        return JSONResponse({"error": str(error)}, status_code=400)
    finally:
        await form.close()
    return JSONResponse(result, status_code=201, headers={"Location": result["url"]})


def _ingest(app, files, title: str) -> dict:  # noqa: ANN001
    with app.state.db.session() as session:
        run = Ingest(session, title=title, limits=app.state.limits).ingest(files)
        session.commit()
        return run_summary(session, run, app.state.urls)


@router.get("/runs/{run_id}")
def run_page(request: Request, run_id: str, session: SessionDep, urls: UrlsDep):
    run = load_run(session, run_id)
    return respond(request, "run.html", run_summary(session, run, urls))


@router.get("/runs/{run_id}/c/{ordinal}")
def compilation_page(request: Request, run_id: str, ordinal: str, session: SessionDep, urls: UrlsDep):
    compilation = load_compilation(session, run_id, ordinal)
    return respond(request, "compilation.html", compilation_detail(session, compilation, urls))


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/raw")
def snapshot_raw(run_id: str, ordinal: str, index: str, session: SessionDep):
    snapshot = load_snapshot(session, load_compilation(session, run_id, ordinal), index)
    data = blob_reader.get(session, snapshot.blob) or b""
    return Response(data, media_type="text/plain; charset=utf-8", headers=_immutable(snapshot.blob))


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}")
def snapshot_page(request: Request, run_id: str, ordinal: str, index: str, session: SessionDep, urls: UrlsDep):
    compilation = load_compilation(session, run_id, ordinal)
    snapshot = load_snapshot(session, compilation, index)
    data = snapshot_dict(compilation.run_id, compilation.ordinal, snapshot, urls)
    data["kernel"] = compilation.kernel
    data["compilation_url"] = urls.compilation(compilation.run_id, compilation.ordinal)
    data["text"] = blob_reader.text(session, snapshot.blob) or ""
    return respond(request, "snapshot.html", data)


@router.get("/runs/{run_id}/c/{ordinal}/files/{artifact_pk}")
def artifact_file(run_id: str, ordinal: str, artifact_pk: str, session: SessionDep):
    compilation = load_compilation(session, run_id, ordinal)
    artifact = session.get(Artifact, int_param(artifact_pk))
    if artifact is None or artifact.compilation_pk != compilation.pk or artifact.blob is None:
        raise HTTPException(404, "no such file")
    data = blob_reader.get(session, artifact.blob) or b""
    media = "application/json" if artifact.kind in ("json", "grp") else "text/plain; charset=utf-8"
    return Response(data, media_type=media, headers=_immutable(artifact.blob))


def _immutable(digest: str) -> dict[str, str]:
    return {"ETag": f'"{digest}"', "Cache-Control": "private, max-age=31536000, immutable"}


__all__ = ["router", "PlainTextResponse"]
