"""A pass's reproducers (reproducer.mlir, reproducer.py) and its "Re-run this pass" panel."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app import render
from app.replay import service
from app.replay.reproducers import pipeline, reproducer_mlir, reproducer_py
from app.urls import Urls, compilation_id
from app.web.responder import SessionDep, UrlsDep, render_block, respond, wants_json
from app.web.views.ir_page import load_compilation, load_snapshot

router = APIRouter()


def _load(session, run_id: str, ordinal: str, index: str):
    compilation = load_compilation(session, run_id, ordinal)
    snapshot = load_snapshot(session, compilation, index)
    if snapshot.kind != "mlir":
        raise HTTPException(404, "only an MLIR pass's dump has a reproducer")
    return compilation, snapshot


def _download(text: str, name: str, media: str) -> Response:
    return Response(text, media_type=f"{media}; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"',
                             "Cache-Control": "private, max-age=0, must-revalidate"})


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/reproducer.mlir")
def reproducer_mlir_file(request: Request, run_id: str, ordinal: str, index: str, session: SessionDep):
    compilation, snapshot = _load(session, run_id, ordinal, index)
    spec = service.pass_spec(compilation, snapshot)
    text = render.blob_reader.text(session, snapshot.blob) or ""
    return _download(reproducer_mlir(spec, text), "reproducer.mlir", "text/plain")


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/reproducer.py")
def reproducer_py_file(request: Request, run_id: str, ordinal: str, index: str, session: SessionDep):
    compilation, snapshot = _load(session, run_id, ordinal, index)
    spec = service.spec_for(session, compilation, snapshot, request.app.state.settings)
    text = render.blob_reader.text(session, snapshot.blob) or ""
    return _download(reproducer_py(spec, text), "reproducer.py", "text/x-python")


def reproducer_links(urls: Urls, run_id: str, ordinal: int, index: int) -> dict:
    return {"reproducer_mlir_url": urls.snapshot_reproducer(run_id, ordinal, index, "mlir"),
            "reproducer_py_url": urls.snapshot_reproducer(run_id, ordinal, index, "py"),
            "replay_url": urls.snapshot_replay(run_id, ordinal, index)}


def failure_reproducer(session, compilation, urls: Urls) -> dict | None:
    """A failed compile's "reproduce the failure": its failing pass's reproducers and re-run, or why
    there is none (the compile failed before any pass dumped its IR)."""
    if compilation.status != "failed":
        return None
    snapshot = service.failing_pass(session, compilation)
    if snapshot is None:
        return {"pass": compilation.failed_pass, "index": None,
                "reason": "no dump before the failure (it failed before any pass printed its IR, or the log "
                          "kept no dump of the failing pass): nothing to replay"}
    return {"pass": snapshot.pass_name, "index": snapshot.index, "reason": None,
            "snapshot_url": urls.snapshot(compilation.run_id, compilation.ordinal, snapshot.index),
            **reproducer_links(urls, compilation.run_id, compilation.ordinal, snapshot.index)}


def _commands(request: Request, urls: Urls, run_id: str, ordinal: int, index: int, after: int | None,
              version: str | None) -> list[str]:
    origin = str(request.base_url).rstrip("/")
    if urls.base and origin.endswith(urls.base):
        origin = origin[: -len(urls.base)]
    py = origin + urls.snapshot_reproducer(run_id, ordinal, index, "py")
    fetch_after = f" && curl -so after.mlir {origin}{urls.snapshot_raw(run_id, ordinal, after)}" if after is not None else ""
    pip = f"pip install triton=={version} && " if version else ""
    return [
        f"{pip}curl -so reproducer.py {py}{fetch_after} && python reproducer.py{' after.mlir' if after is not None else ''}",
        f"irlens replay --server {origin}{urls.base} --pass {index} {compilation_id(run_id, ordinal)}"
        + (" --python PYTHON_WITH_TRITON_" + version.replace(".", "_") if version else ""),
    ]


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/replay")
@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/replay.json")
def replay_panel(request: Request, run_id: str, ordinal: str, index: str, session: SessionDep, urls: UrlsDep):
    compilation, snapshot = _load(session, run_id, ordinal, index)
    result = service.replay_one(session, compilation, snapshot, request.app.state.settings)
    run_id, number = compilation.run_id, compilation.ordinal
    data = {
        "compilation": compilation_id(run_id, number), "index": snapshot.index, "pass": snapshot.pass_name,
        "pipeline": pipeline(service.pass_spec(compilation, snapshot)),
        **{key: result.get(key) for key in ("status", "reason", "after", "changed", "diff", "ignored",
                                             "logged_error", "reproduced", "triton", "seconds")},
        "snapshot_url": urls.snapshot(run_id, number, snapshot.index),
        **reproducer_links(urls, run_id, number, snapshot.index),
    }
    data["diff"] = data["diff"] or []
    version = (result.get("triton") or {}).get("capture")
    data["commands"] = _commands(request, urls, run_id, number, snapshot.index, result.get("after"), version)
    if wants_json(request) or request.headers.get("hx-request") != "true":
        return respond(request, "replay.html", data)
    context = {"request": request, "data": data, "urls": urls, "settings": request.app.state.settings}
    return Response(render_block("replay.html", "panel", context), media_type="text/html; charset=utf-8")
