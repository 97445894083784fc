"""One snapshot's IR: the page, its raw text, and the fragments a long page loads as it scrolls."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.insight.page_data import snapshot_dict
from app.insight.remarks import at_lines, compilation_remarks
from app.store.models import Banner, Compilation, Snapshot
from app.urls import snapshot_id
from app.web.responder import SessionDep, UrlsDep, immutable_headers
from app.web.views.ir_page import (
    ir_response,
    lines_fragment,
    load_compilation,
    load_snapshot,
    open_ir,
    text_loader,
)
from app.web.views.replay import reproducer_links

router = APIRouter()


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/raw")
def snapshot_raw(run_id: str, ordinal: str, index: str, session: SessionDep):
    """The snapshot's IR exactly as logged (the blob's bytes), as text/plain."""
    snapshot = load_snapshot(session, load_compilation(session, run_id, ordinal), index)
    data = render.blob_reader.get(session, snapshot.blob) or b""
    return Response(data, media_type="text/plain; charset=utf-8", headers=immutable_headers(snapshot.blob))


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}")
def snapshot_page(
    request: Request, run_id: str, ordinal: str, index: str, session: SessionDep, urls: UrlsDep
):
    opened = open_ir(request, session, run_id, ordinal, load_snapshot, index)
    if isinstance(opened, Response):
        return opened
    compilation, snapshot, tag = opened.compilation, opened.part, opened.tag
    run_id, ordinal_number = compilation.run_id, compilation.ordinal
    load_text = text_loader(session, snapshot.blob)
    rendered = _snapshot_analysis(session, compilation, snapshot, load_text)

    data = snapshot_dict(run_id, ordinal_number, snapshot, urls)
    neighbours = {
        row.index: row
        for row in session.execute(
            select(
                Snapshot.index, Banner.pass_name, Banner.pass_arg, Snapshot.stage, Snapshot.changed
            ).join(Snapshot.banner).where(
                Snapshot.compilation_pk == compilation.pk,
                Snapshot.index.in_([snapshot.index - 1, snapshot.index + 1]),
            )
        )
    }
    for name, offset in (("prev", -1), ("next", 1)):
        row = neighbours.get(snapshot.index + offset)
        data[name] = (
            None
            if row is None
            else {
                "index": row.index,
                "pass": row.pass_name,
                "pass_arg": row.pass_arg,
                "stage": row.stage,
                "id": snapshot_id(run_id, ordinal_number, row.index),
                "url": urls.snapshot(run_id, ordinal_number, row.index),
            }
        )
        data[f"{name}_url"] = None if row is None else data[name]["url"]
    data["snapshot_count"] = len(compilation.snapshots)
    if snapshot.kind == "mlir":
        data.update(reproducer_links(urls, run_id, ordinal_number, snapshot.index))
    # the compiler's remarks from the pass this snapshot is the input of, at their ops' lines
    data["remarks"] = at_lines(compilation_remarks(session, compilation, urls), snapshot.index,
                               rendered.by_source, rendered.locs)

    def lines_url(start: int, count: int) -> str:
        return urls.snapshot_lines(run_id, ordinal_number, snapshot.index, start, count)

    return ir_response(request, session, compilation, rendered, load_text, urls, data, tag, lines_url)

def _snapshot_analysis(
    session: Session, compilation: Compilation, snapshot: Snapshot, load_text: render.TextLoader
) -> render.Analysis:
    kind = render.snapshot_kind(snapshot.kind)
    if kind == "llvm":
        debug_info = _debug_info(session, compilation, snapshot, load_text)
    else:
        debug_info = _loc_donor(session, compilation, snapshot, load_text)
    return render.analyse_ir(snapshot.blob, kind, load_text, debug_info)


@router.get("/runs/{run_id}/c/{ordinal}/s/{index}/lines")
def snapshot_lines(
    request: Request,
    run_id: str,
    ordinal: str,
    index: str,
    session: SessionDep,
    start: int = 0,
    count: int = render.PAGE_LINES,
):
    """An HTML fragment of the snapshot's marked-up lines, for a page scrolling past its first ones."""
    opened = open_ir(request, session, run_id, ordinal, load_snapshot, index)
    if isinstance(opened, Response):
        return opened
    compilation, snapshot = opened.compilation, opened.part
    analysis = _snapshot_analysis(session, compilation, snapshot, text_loader(session, snapshot.blob))
    return lines_fragment(request, session, opened, analysis, start, count)


def _loc_donor(
    session: Session, compilation: Compilation, snapshot: Snapshot, load_text: render.TextLoader
) -> tuple[str, render.TextLoader] | None:
    """For an MLIR snapshot of a per-pass folder printed without locations: the compilation's first
    snapshot when it has them (its `*_0_with_loc.mlir`), whose ops lend theirs
    (app/render/loc_transfer.py). The same rule as the map page's (app/insight/line_index.py)."""
    if snapshot.stage != "mlir" or not snapshot.index or not render.lacks_locations(load_text() or ""):
        return None
    first = session.scalar(
        select(Snapshot.blob).join(Snapshot.banner)
        .where(Snapshot.compilation_pk == compilation.pk, Snapshot.index == 0, Banner.kind != "llvm")
    )
    if first is None:
        return None
    loader = text_loader(session, first)
    return (first, loader) if render.has_locations(loader() or "") else None


def _debug_info(
    session: Session, compilation: Compilation, snapshot: Snapshot, load_text: render.TextLoader
) -> tuple[str, render.TextLoader] | None:
    """For an LLVM function-scope dump without metadata: the latest earlier LLVM dump of the
    compilation that has it (a module dump), so ``!dbg !N`` can be resolved."""
    if not render.needs_debug_info(load_text() or ""):
        return None
    earlier = session.scalars(
        select(Snapshot.blob)
        .join(Snapshot.banner)
        .where(
            Snapshot.compilation_pk == compilation.pk,
            Banner.kind == "llvm",
            Snapshot.index < snapshot.index,
        )
        .order_by(Snapshot.index.desc())
    )
    seen: set[str] = set()
    for digest in earlier:
        if digest in seen:
            continue
        seen.add(digest)
        loader = text_loader(session, digest)
        if render.has_debug_info(loader() or ""):
            return digest, loader
    return None
