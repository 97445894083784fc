"""An uploaded Python file of a run, highlighted with numbered lines (`/runs/ID/src/PATH`, `#L236`
for a line), and the links from diagnostics (`kernels.py:236:5`) to it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from markupsafe import Markup
from sqlalchemy.orm import Session

from app import render
from app.insight.generated_sources import GeneratedSources
from app.store.models import Run
from app.urls import Urls
from app.web.responder import SessionDep, UrlsDep, respond, wants_json
from app.web.views.ir_page import run_sources
from parsers.helion.generated import holds_origins, parse
from parsers.locations.loc import match_source

router = APIRouter()


@router.get("/runs/{run_id}/src/{path:path}")
def source_page(request: Request, run_id: str, path: str, session: SessionDep, urls: UrlsDep):
    if session.get(Run, run_id) is None:
        raise HTTPException(404, "no such run")
    sources = run_sources(session, run_id)
    if wants_json(request) and path not in sources:
        path = path.removesuffix(".json")
    digest = sources.get(path)
    if digest is None:
        raise HTTPException(404, "no such source file in this run")
    text = render.blob_reader.text(session, digest) or ""
    data: dict[str, Any] = {
        "run": run_id,
        "run_url": urls.run(run_id),
        "path": path,
        "name": render.basename(path),
        "url": urls.source(run_id, path),
        "lines": text.count("\n") + (0 if text.endswith("\n") or not text else 1),
    }
    data["helion"] = helion_kernels(session, run_id, text, sources, urls)
    if wants_json(request):
        data["text"] = text
    else:
        rendered = render.render_python(digest, lambda: text)
        data["page"] = {"lines": [Markup(line) for line in rendered.lines]}  # escaped by the renderer
    return respond(request, "source.html", data)


def helion_kernels(session: Session, run_id: str, text: str, sources: dict[str, str], urls: Urls
                   ) -> list[dict[str, Any]] | None:
    """For Helion's generated code: each function (the `@triton.jit` kernels first) with the Helion
    file and lines each of its statements came from, linked to both files; None for other sources."""
    if not holds_origins(text.encode("utf-8", "replace")):
        return None
    code = parse(text)
    generated = GeneratedSources(session, sources)
    resolved = {name: generated.resolve(code, name) for name in code.files}
    kernels = []
    for kernel in sorted(code.kernels, key=lambda k: not k.device):
        statements = []
        for statement in kernel.statements:
            origin = statement.origin
            file = resolved.get(origin.file) if origin.file is not None else None
            statements.append({
                "line": statement.line, "origin": origin.label(), "file": file,
                "start": origin.start if file else None, "end": origin.end if file else None,
                "source_url": urls.source(run_id, file) + f"#L{origin.start}" if file in sources else None,
            })
        kernels.append({"name": kernel.name, "line": kernel.line, "device": kernel.device,
                        "files": [resolved[name] for name in kernel.files], "statements": statements})
    return kernels


def link_diagnostics(session: Session, run_id: str, diagnostics: list[dict], urls: Urls) -> None:
    """Give each diagnostic whose file is an uploaded source a `source_url` to its line."""
    if not any(d.get("file") for d in diagnostics):
        return
    sources = list(run_sources(session, run_id))
    if not sources:
        return
    for diagnostic in diagnostics:
        if diagnostic.get("file"):
            matched = match_source(diagnostic["file"], sources)
            if matched is not None:
                line = diagnostic.get("line")
                diagnostic["source_url"] = urls.source(run_id, matched) + (f"#L{line}" if line else "")
