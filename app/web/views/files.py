"""A compilation's cache files: as stored, and viewed highlighted like a snapshot."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from app import render
from app.insight.page_data import artifact_sort_key
from app.web.responder import SessionDep, UrlsDep, immutable_headers
from app.web.views.ir_page import (
    ir_response,
    lines_fragment,
    load_artifact,
    load_compilation,
    open_ir,
    text_loader,
)

router = APIRouter()


@router.get("/runs/{run_id}/c/{ordinal}/files/{artifact_pk}")
def artifact_file(run_id: str, ordinal: str, artifact_pk: str, session: SessionDep):
    """A cache file as stored (the bare URL); ``/view`` shows it highlighted."""
    compilation = load_compilation(session, run_id, ordinal)
    artifact = load_artifact(session, compilation, artifact_pk)
    data = render.blob_reader.get(session, artifact.blob) or b""
    media = "application/json" if artifact.kind in ("json", "grp") else "text/plain; charset=utf-8"
    return Response(data, media_type=media, headers=immutable_headers(artifact.blob))


@router.get("/runs/{run_id}/c/{ordinal}/files/{artifact_pk}/view")
@router.get("/runs/{run_id}/c/{ordinal}/files/{artifact_pk}/view.json")
def artifact_view(
    request: Request, run_id: str, ordinal: str, artifact_pk: str, session: SessionDep, urls: UrlsDep
):
    opened = open_ir(request, session, run_id, ordinal, load_artifact, artifact_pk)
    if isinstance(opened, Response):
        return opened
    compilation, artifact, tag = opened.compilation, opened.part, opened.tag
    kind = render.artifact_kind(artifact.kind)
    load_text = text_loader(session, artifact.blob)
    rendered = render.analyse_ir(artifact.blob, kind, load_text)
    run_id, ordinal_number = compilation.run_id, compilation.ordinal
    data: dict[str, Any] = {
        "artifact": artifact.pk,
        "kind": artifact.kind,
        "render_kind": kind,
        "path": artifact.path,
        "name": render.basename(artifact.path),
        "size": artifact.size,
        "sha256": artifact.sha256,
        "lines": rendered.line_count,
        "url": urls.artifact_view(run_id, ordinal_number, artifact.pk),
        "raw_url": urls.artifact(run_id, ordinal_number, artifact.pk),
        "files": [
            {
                "kind": other.kind,
                "name": render.basename(other.path),
                "url": urls.artifact_view(run_id, ordinal_number, other.pk),
                "current": other.pk == artifact.pk,
            }
            for other in sorted(compilation.artifacts, key=artifact_sort_key)
            if other.blob is not None
        ],
    }

    def lines_url(start: int, count: int) -> str:
        return urls.artifact_lines(run_id, ordinal_number, artifact.pk, start, count)

    return ir_response(request, session, compilation, rendered, load_text, urls, data, tag, lines_url)


@router.get("/runs/{run_id}/c/{ordinal}/files/{artifact_pk}/view/lines")
def artifact_lines(
    request: Request,
    run_id: str,
    ordinal: str,
    artifact_pk: str,
    session: SessionDep,
    start: int = 0,
    count: int = render.PAGE_LINES,
):
    """An HTML fragment of a cached file's marked-up lines (see :func:`snapshot_lines`)."""
    opened = open_ir(request, session, run_id, ordinal, load_artifact, artifact_pk)
    if isinstance(opened, Response):
        return opened
    artifact = opened.part
    kind = render.artifact_kind(artifact.kind)
    analysis = render.analyse_ir(artifact.blob, kind, text_loader(session, artifact.blob))
    return lines_fragment(request, session, opened, analysis, start, count)
