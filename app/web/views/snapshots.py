"""A compilation's pass timeline, one snapshot's IR, a cache file, and a Python line across passes.

Pages here render IR through :mod:`app.render`, which caches the expensive work per blob hash.
A snapshot or file page answers ``If-None-Match`` with 304, since what it shows is a function
of an immutable blob and the render version.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.highlight.hwops import GROUPS
from app.insight.comparisons import compare_candidates
from app.insight.compilation_data import compilation_data
from app.insight.launches import launch_page_cells
from app.insight.line_metrics import line_metric_fields
from app.insight.page_data import artifact_sort_key, snapshot_dict
from app.insight.pass_charts import chart_svgs
from app.insight.source_map import pass_indexes
from app.layouts.aliases import drawable
from app.layouts.cvt_costs import convert_costs, summary
from app.store.models import Artifact, Banner, Compilation, Snapshot, Source
from app.urls import Urls, snapshot_id
from app.web.auth import identify, visible_runs
from app.web.page_cache import cache_response, cached_response
from app.web.responder import (
    SessionDep,
    UrlsDep,
    immutable_headers,
    int_param,
    respond,
    strip_json,
    wants_json,
)
from app.web.source_window import source_blocks
from parsers.loc import match_source

router = APIRouter()

MAX_SOURCE_PANES = 4  # Python files shown beside one snapshot
MAP_SNIPPET_LINES = 12  # IR lines quoted per pass on the map page (the JSON lists them all)
MAX_FRAGMENT_LINES = 50_000


# --------------------------------------------------------------------------- loading


def load_compilation(session: Session, run_id: str, ordinal: str) -> Compilation:
    compilation = session.scalar(
        select(Compilation).where(
            Compilation.run_id == strip_json(run_id), Compilation.ordinal == int_param(ordinal)
        )
    )
    if compilation is None:
        raise HTTPException(404, "no such compilation")
    return compilation


def load_snapshot(session: Session, compilation: Compilation, index: str) -> Snapshot:
    snapshot = session.scalar(
        select(Snapshot).where(Snapshot.compilation_pk == compilation.pk, Snapshot.index == int_param(index))
    )
    if snapshot is None:
        raise HTTPException(404, "no such snapshot")
    return snapshot


def load_artifact(session: Session, compilation: Compilation, artifact_pk: str) -> Artifact:
    artifact = session.get(Artifact, int_param(artifact_pk))
    if artifact is None or artifact.compilation_pk != compilation.pk or artifact.blob is None:
        raise HTTPException(404, "no such file")
    return artifact


def _text_loader(session: Session, digest: str):
    return lambda: render.blob_reader.text(session, digest)


def _etag_for(request: Request, digest: str) -> tuple[str, Response | None]:
    """The page's ETag, and a 304 response when the client already holds this version."""
    variant = request.url.path + ("?" + request.url.query if request.url.query else "")
    tag = render.etag(digest, variant)
    if render.not_modified(request.headers.get("if-none-match"), tag):
        return tag, Response(status_code=304, headers=render.cache_headers(tag))
    return tag, None


# --------------------------------------------------------------------------- compilation


@router.get("/runs/{run_id}/c/{ordinal}")
def compilation_page(request: Request, run_id: str, ordinal: str, session: SessionDep, urls: UrlsDep):
    compilation = load_compilation(session, run_id, ordinal)
    data = compilation_data(session, compilation, urls, request.query_params.get("metric"))
    visible = visible_runs(identify(request), request.app.state.settings)  # other runs: those the reader may list
    data["compare_with"] = compare_candidates(session, compilation, urls, visible)
    if not wants_json(request):
        # the op columns worth showing: groups some snapshot of this compilation uses
        present = [group for group in GROUPS if any(row["ops"].get(group.key) for row in data["snapshots"])]
        data["page"] = {
            "groups": present,
            "launch_cells": launch_page_cells(data["launches"]),
            "charts": chart_svgs(data["charts"], data["snapshots"]),
            "outliers": {item["index"]: item for item in data["charts"]["outliers"]},
        }
    return respond(request, "compilation.html", data)


# --------------------------------------------------------------------------- snapshot


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
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    compilation = load_compilation(session, run_id, ordinal)
    snapshot = load_snapshot(session, compilation, index)
    tag, unchanged = _etag_for(request, snapshot.blob)
    if unchanged is not None:
        return unchanged
    run_id, ordinal_number = compilation.run_id, compilation.ordinal
    load_text = _text_loader(session, snapshot.blob)
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

    def lines_url(start: int, count: int) -> str:
        return urls.snapshot_lines(run_id, ordinal_number, snapshot.index, start, count)

    return _ir_response(request, session, compilation, rendered, load_text, urls, data, tag, lines_url)


def _ir_response(
    request: Request, session: Session, compilation: Compilation, rendered: render.Analysis,
    load_text: render.TextLoader, urls: Urls, data: dict[str, Any], tag: str,
    lines_url: Callable[[int, int], str],
) -> Response:
    """A snapshot or cache-file page: `data` plus the IR's fields and first lines, kept in the page cache."""
    data.update(_compilation_context(compilation, urls))
    data.update(_ir_fields(session, compilation, rendered, load_text, urls, full=wants_json(request)))
    data.update(line_metric_fields(session, compilation, rendered, load_text, data, request.query_params.get("metric")))
    if not wants_json(request):
        data["page"] = _ir_page(session, compilation, rendered, urls, lines_url, _show_all(request))
    response = respond(request, "snapshot.html", data, headers=render.cache_headers(tag))
    return cache_response(request, session, compilation.run_id, response)


def _snapshot_analysis(
    session: Session, compilation: Compilation, snapshot: Snapshot, load_text: render.TextLoader
) -> render.Analysis:
    kind = render.snapshot_kind(snapshot.kind)
    debug_info = _debug_info(session, compilation, snapshot, load_text) if kind == "llvm" else None
    return render.analyse_ir(snapshot.blob, kind, load_text, debug_info)


def _show_all(request: Request) -> bool:
    return request.query_params.get("all") == "1"


def _lines_fragment(
    request: Request, session: Session, run_id: str, analysis: render.Analysis, digest: str, start: int, count: int
):
    """Lines ``start + 1`` .. ``start + count`` as an HTML fragment (what a page loads as it scrolls)."""
    if start < 0 or count < 0 or count > MAX_FRAGMENT_LINES:
        raise HTTPException(422, f"start must be >= 0 and count between 0 and {MAX_FRAGMENT_LINES}")
    lines = render.page_lines(analysis, start, count)
    body = render.group_chunks(lines, analysis.large)  # escaped by the renderer
    tag = render.etag(digest, request.url.path + "?" + request.url.query)
    response = HTMLResponse(body, headers=render.cache_headers(tag))
    response.headers["Vary"] = "HX-Request"
    return cache_response(request, session, run_id, response)


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
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    compilation = load_compilation(session, run_id, ordinal)
    snapshot = load_snapshot(session, compilation, index)
    _tag, unchanged = _etag_for(request, snapshot.blob)
    if unchanged is not None:
        return unchanged
    analysis = _snapshot_analysis(session, compilation, snapshot, _text_loader(session, snapshot.blob))
    return _lines_fragment(request, session, compilation.run_id, analysis, snapshot.blob, start, count)


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
        loader = _text_loader(session, digest)
        if render.has_debug_info(loader() or ""):
            return digest, loader
    return None


# --------------------------------------------------------------------------- cache files


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
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    compilation = load_compilation(session, run_id, ordinal)
    artifact = load_artifact(session, compilation, artifact_pk)
    tag, unchanged = _etag_for(request, artifact.blob)
    if unchanged is not None:
        return unchanged
    kind = render.artifact_kind(artifact.kind)
    load_text = _text_loader(session, artifact.blob)
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

    return _ir_response(request, session, compilation, rendered, load_text, urls, data, tag, lines_url)


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
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    compilation = load_compilation(session, run_id, ordinal)
    artifact = load_artifact(session, compilation, artifact_pk)
    _tag, unchanged = _etag_for(request, artifact.blob)
    if unchanged is not None:
        return unchanged
    kind = render.artifact_kind(artifact.kind)
    analysis = render.analyse_ir(artifact.blob, kind, _text_loader(session, artifact.blob))
    return _lines_fragment(request, session, compilation.run_id, analysis, artifact.blob, start, count)


# --------------------------------------------------------------------------- a Python line in every pass


@router.get("/runs/{run_id}/c/{ordinal}/map")
@router.get("/runs/{run_id}/c/{ordinal}/map.json")
def source_map(
    request: Request,
    run_id: str,
    ordinal: str,
    session: SessionDep,
    urls: UrlsDep,
    file: str | None = None,
    line: int | None = None,
):
    """Which IR lines map to Python ``file:line`` in every pass of the compilation."""
    compilation = load_compilation(session, run_id, ordinal)
    run_id, ordinal_number = compilation.run_id, compilation.ordinal
    data: dict[str, Any] = {"file": file, "line": line}
    data.update(_compilation_context(compilation, urls))
    data["url"] = urls.source_map(run_id, ordinal_number, file, line)
    snapshots = list(compilation.snapshots)
    files: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    indexes = pass_indexes(session, snapshots)
    for snapshot, index in zip(snapshots, indexes, strict=True):
        for loc_file, count in index.files.items():
            files[loc_file] = files.get(loc_file, 0) + count
        if file is None or line is None:
            continue
        ir_lines: list[int] = []
        for loc_file in index.files:
            if _same_file(loc_file, file):
                ir_lines.extend(index.lines(loc_file, line))
        ir_lines.sort()
        row = {
            "index": snapshot.index,
            "pass": snapshot.pass_name,
            "pass_arg": snapshot.pass_arg,
            "stage": snapshot.stage,
            "kind": snapshot.kind,
            "changed": snapshot.changed,
            "id": snapshot_id(run_id, ordinal_number, snapshot.index),
            "url": urls.snapshot(run_id, ordinal_number, snapshot.index),
            "lines": ir_lines,
        }
        rows.append(row)
    data["files"] = [
        {"file": name, "lines": count} for name, count in sorted(files.items(), key=lambda kv: -kv[1])
    ]
    data["snapshots"] = rows
    sources = _run_sources(session, compilation.run_id)
    matched = match_source(file, list(sources)) if file else None
    data["source"] = matched
    data["source_line"] = None
    if matched is not None and line is not None:
        source_text = render.blob_reader.text(session, sources[matched]) or ""
        source_lines = source_text.split("\n")
        if 1 <= line <= len(source_lines):
            data["source_line"] = source_lines[line - 1]
    if file is not None and line is not None:
        data["prev_line_url"] = urls.source_map(run_id, ordinal_number, file, line - 1) if line > 1 else None
        data["next_line_url"] = urls.source_map(run_id, ordinal_number, file, line + 1)
    if not wants_json(request):
        data["page"] = _map_page(snapshots, [index.text for index in indexes], rows, data)
    return respond(request, "_snap_map.html", data)


def _map_page(
    snapshots: list[Snapshot], texts: list[render.TextLoader], rows: list[dict], data: dict
) -> dict:
    """Quoted IR lines per pass (highlighted), skipping passes whose IR did not change."""
    by_index = {snapshot.index: snapshot for snapshot in snapshots}
    text_of = {snapshot.index: text for snapshot, text in zip(snapshots, texts, strict=True)}
    quotes: dict[int, list[tuple[int, Markup]]] = {}
    seen_blobs: dict[str, int] = {}
    highlighted: dict[tuple[str, str], Markup] = {}  # successive passes quote many equal lines
    for row in rows:
        snapshot = by_index[row["index"]]
        first = seen_blobs.setdefault(snapshot.blob, row["index"])
        row_quote: list[tuple[int, Markup]] = []
        if first == row["index"] and row["lines"]:
            quoted = row["lines"][:MAP_SNIPPET_LINES]
            text_lines = (text_of[row["index"]]() or "").split("\n", max(quoted))  # not past the last quoted
            kind = render.snapshot_kind(snapshot.kind)
            for number in quoted:
                if number <= len(text_lines):
                    # the renderer escapes every token, so its output is safe markup
                    key = (text_lines[number - 1], kind)
                    if key not in highlighted:
                        highlighted[key] = Markup(render.highlight_line(*key))
                    row_quote.append((number, highlighted[key]))
        quotes[row["index"]] = row_quote
    source_html = None
    if data.get("source_line") is not None:
        source_html = Markup(render.highlight_line(data["source_line"], "python"))
    return {
        "quotes": quotes,
        "same_as": {row["index"]: seen_blobs[by_index[row["index"]].blob] for row in rows},
        "source_html": source_html,
        "colour": render.line_colour(data["file"], data["line"])
        if data.get("file") and data.get("line")
        else None,
        "basename": render.basename(data["file"]) if data.get("file") else None,
        "with_lines": sum(1 for row in rows if row["lines"]),
    }


def _same_file(recorded: str, wanted: str) -> bool:
    """``wanted`` names the recorded path: equal, or a path suffix of it (at least the file name)."""
    if recorded == wanted:
        return True
    return match_source(wanted, [recorded]) is not None and render.basename(recorded) == render.basename(
        wanted
    )


# --------------------------------------------------------------------------- shared parts


def _compilation_context(compilation: Compilation, urls: Urls) -> dict[str, Any]:
    return {
        "run": compilation.run_id,
        "run_url": urls.run(compilation.run_id),
        "compilation": compilation.ordinal,
        "kernel": compilation.kernel,
        "target": compilation.target,
        "compilation_url": urls.compilation(compilation.run_id, compilation.ordinal),
        "map_url": urls.source_map(compilation.run_id, compilation.ordinal),
    }


def _run_sources(session: Session, run_id: str) -> dict[str, str]:
    """The run's uploaded Python files: path -> blob hash."""
    rows = session.execute(
        select(Source.path, Source.blob).where(Source.run_id == run_id).order_by(Source.pk)
    )
    return {path: blob for path, blob in rows}


def _matched_sources(session: Session, run_id: str, rendered: render.Analysis) -> list[dict[str, Any]]:
    """Each file the IR's locations name (most lines first), with the uploaded file it matches."""
    sources = _run_sources(session, run_id)
    matched = []
    for position, loc_file in enumerate(rendered.loc_files):
        path = match_source(loc_file, list(sources)) if sources else None
        matched.append(
            {
                "index": position,
                "file": loc_file,
                "name": render.basename(loc_file),
                "path": path,
                "blob": sources.get(path) if path else None,
                "lines": sum(
                    len(lines) for (file, _), lines in rendered.by_source.items() if file == loc_file
                ),
            }
        )
    return matched


def _ir_fields(
    session: Session,
    compilation: Compilation,
    rendered: render.Analysis,
    load_text: render.TextLoader,
    urls: Urls,
    full: bool,
) -> dict[str, Any]:
    """The fields every IR page shares. ``full`` adds the JSON-only ones (the text and one
    location per line), which the HTML page shows as rendered lines instead."""
    matched = _matched_sources(session, compilation.run_id, rendered)
    fields: dict[str, Any] = {
        "render_kind": rendered.kind,
        "line_count": rendered.line_count,
        "layouts": rendered.layouts_json(),
        "ops": dict(rendered.ops),
        "op_lines": dict(rendered.op_lines),
        "source": matched[0]["path"] if matched else None,
        "sources": [
            {
                "file": item["file"],
                "path": item["path"],
                "lines": item["lines"],
                "map_url": urls.source_map(compilation.run_id, compilation.ordinal, item["file"]),
            }
            for item in matched
        ],
    }
    fields["conversions"] = _conversions(rendered, load_text, compilation.target or "")
    fields["conversion_counts"] = summary(fields["conversions"])
    if full:
        fields["text"] = load_text() or ""
        fields["locs"] = rendered.locs_json()
    return fields


def _conversions(rendered: render.Analysis, load_text: render.TextLoader, target: str) -> list[dict[str, Any]]:
    """Each ttg.convert_layout with what its lowering costs (app/layouts/cvt_costs.py); the
    compilation's target sizes scratch where the module names none."""
    if rendered.kind != "mlir":
        return []
    text = load_text() or ""
    if "convert_layout" not in text:
        return []
    return convert_costs(io.StringIO(text), target)


def _ir_page(
    session: Session,
    compilation: Compilation,
    rendered: render.Analysis,
    urls: Urls,
    lines_url: Callable[[int, int], str],
    show_all: bool = False,
) -> dict[str, Any]:
    """What only the HTML page needs: the first page of lines (all of them with ``?all=1``) and
    where to fetch the rest, the source panes, the legends."""
    matched = _matched_sources(session, compilation.run_id, rendered)
    panes = []
    for item in matched[:MAX_SOURCE_PANES]:
        pane = dict(item)
        pane["map_url"] = urls.source_map(compilation.run_id, compilation.ordinal)
        if item["blob"] is not None:
            source = render.render_python(item["blob"], _text_loader(session, item["blob"]))
            mapped = {
                line: len(ir) for (file, line), ir in rendered.by_source.items() if file == item["file"]
            }
            first = min(mapped) if mapped else 1
            pane["first_line"] = first
            rows = [
                (
                    number,
                    Markup(code),  # escaped by the renderer
                    mapped.get(number, 0),
                    render.line_colour(item["file"], number) if number in mapped else None,
                )
                for number, code in enumerate(source.lines, start=1)
            ]
            pane["blocks"] = [
                {"start": block.start, "count": block.end - block.start, "live": block.live,
                 "rows": rows[block.start - 1:block.end - 1]}
                for block in source_blocks(len(rows), first, whole=show_all)
            ]
        panes.append(pane)
    groups = [
        {
            "key": group.key,
            "label": group.label,
            "description": group.description,
            "ops": rendered.ops.get(group.key, 0),
            "lines": rendered.op_lines.get(group.key, 0),
        }
        for group in GROUPS
    ]
    step = rendered.page_lines  # a part per page of markup (the whole text where it lexes whole)
    # a text longer than a part opens with its first FIRST_LINES; a shorter one is sent whole
    first = render.FIRST_LINES if step == render.PAGE_LINES and rendered.line_count > step else step
    shown = rendered.line_count if show_all else min(first, rendered.line_count)
    pending = []
    start = shown
    while start < rendered.line_count:  # the first part up to the next page's start, then one per page
        count = min((start // step + 1) * step, rendered.line_count) - start
        pending.append({"start": start, "count": count, "url": lines_url(start, count)})
        start += count
    # What the layout inspector can draw, aliases expanded: a click on a use opens it at that shape.
    drawn = drawable({alias: layout.definition for alias, layout in rendered.layouts.items()})
    script_data = None
    if pending:  # the lines not in the page yet: what the script needs to find and mark them
        script_data = json.dumps(
            {"py": rendered.py_keys(), "groups": rendered.group_lines()}, separators=(",", ":")
        ).replace("<", "\\u003c")
    return {
        # escaped by the renderer
        "lines_html": Markup(render.group_chunks(render.page_lines(rendered, 0, shown), rendered.large)),
        "pending": pending,
        "script_data": Markup(script_data) if script_data else None,
        "large": rendered.large,
        "line_count": rendered.line_count,
        "loc_lines": rendered.loc_lines,
        "op_marks": any(rendered.op_lines.values()),
        "loc_tokens": rendered.loc_tokens,
        "layouts": [
            {"alias": alias, "colour": rendered.layout_colours[alias], "draw": drawn.get(alias),
             **render.layout_dict(layout)}
            for alias, layout in rendered.layouts.items()
        ],
        "encodings": [
            {"key": key, **render.layout_dict(layout)} for key, layout in rendered.encodings.items()
        ],
        "groups": groups,
        "panes": panes,
        "missing": [item for item in matched if item["path"] is None],
        "palette": render.PALETTE_SIZE,
    }

