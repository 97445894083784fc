"""What the snapshot, cache-file and map pages share: loading a compilation and its parts by URL,
ETags, and the IR page (fields, first lines, source panes, legends) kept in the page cache.

Pages here render IR through :mod:`app.render`, which caches the expensive work per blob hash.
A snapshot or file page answers ``If-None-Match`` with 304, since what it shows is a function
of an immutable blob and the render version.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.highlight.hwops import GROUPS
from app.insight.generated_sources import GeneratedSources, chained_by_source
from app.insight.line_metrics import line_metric_fields
from app.layouts.aliases import drawable
from app.layouts.cvt_costs import convert_costs, summary
from app.layouts.smem_costs import conflict_counts, smem_accesses
from app.layouts.uses import first_uses
from app.store.models import Artifact, Compilation, Snapshot, Source
from app.urls import Urls
from app.web.page_cache import cache_response, cached_response
from app.web.responder import int_param, respond, strip_json, wants_json
from app.web.source_window import source_blocks
from parsers.locations.loc import match_source

MAX_SOURCE_PANES = 4  # Python files shown beside one snapshot
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


def text_loader(session: Session, digest: str):
    return lambda: render.blob_reader.text(session, digest)


def etag_for(request: Request, digest: str) -> tuple[str, Response | None]:
    """The page's ETag, and a 304 response when the client already holds this version."""
    variant = request.url.path + ("?" + request.url.query if request.url.query else "")
    tag = render.etag(digest, variant)
    if render.not_modified(request.headers.get("if-none-match"), tag):
        return tag, Response(status_code=304, headers=render.cache_headers(tag))
    return tag, None


@dataclass
class Opened:
    """What an IR view renders: the compilation, its snapshot or cache file, and the ETag."""

    compilation: Compilation
    part: Snapshot | Artifact
    tag: str


def open_ir(
    request: Request, session: Session, run_id: str, ordinal: str,
    load_part: Callable[[Session, Compilation, str], Snapshot | Artifact], key: str,
) -> Opened | Response:
    """The page cache's copy, or a 304 when the client holds this version, both before any
    rendering; else what the view needs to render the snapshot or file ``load_part`` finds by ``key``."""
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    compilation = load_compilation(session, run_id, ordinal)
    part = load_part(session, compilation, key)
    tag, unchanged = etag_for(request, part.blob)
    return unchanged if unchanged is not None else Opened(compilation, part, tag)


def ir_response(
    request: Request, session: Session, compilation: Compilation, rendered: render.Analysis,
    load_text: render.TextLoader, urls: Urls, data: dict[str, Any], tag: str,
    lines_url: Callable[[int, int], str],
) -> Response:
    """A snapshot or cache-file page: `data` plus the IR's fields and first lines, kept in the page cache."""
    data.update(compilation_context(compilation, urls))
    data.update(ir_fields(session, compilation, rendered, load_text, urls, full=wants_json(request)))
    data.update(line_metric_fields(session, compilation, rendered, load_text, data, request.query_params.get("metric")))
    if not wants_json(request):
        data["page"] = ir_page(session, compilation, rendered, urls, lines_url, show_all(request), load_text)
    response = respond(request, "snapshot.html", data, headers=render.cache_headers(tag))
    return cache_response(request, session, compilation.run_id, response)


def show_all(request: Request) -> bool:
    return request.query_params.get("all") == "1"


def lines_fragment(
    request: Request, session: Session, opened: Opened, analysis: render.Analysis, start: int, count: int
):
    """Lines ``start + 1`` .. ``start + count`` as an HTML fragment (what a page loads as it scrolls)."""
    if start < 0 or count < 0 or count > MAX_FRAGMENT_LINES:
        raise HTTPException(422, f"start must be >= 0 and count between 0 and {MAX_FRAGMENT_LINES}")
    lines = render.page_lines(analysis, start, count)
    body = render.group_chunks(lines, analysis.large)  # escaped by the renderer
    tag = render.etag(opened.part.blob, request.url.path + "?" + request.url.query)
    response = HTMLResponse(body, headers=render.cache_headers(tag))
    response.headers["Vary"] = "HX-Request"
    return cache_response(request, session, opened.compilation.run_id, response)


# --------------------------------------------------------------------------- shared parts


def compilation_context(compilation: Compilation, urls: Urls) -> dict[str, Any]:
    return {
        "run": compilation.run_id,
        "run_url": urls.run(compilation.run_id),
        "compilation": compilation.ordinal,
        "kernel": compilation.kernel,
        "target": compilation.target,
        "compilation_url": urls.compilation(compilation.run_id, compilation.ordinal),
        "map_url": urls.source_map(compilation.run_id, compilation.ordinal),
    }


def run_sources(session: Session, run_id: str) -> dict[str, str]:
    """The run's uploaded Python files: path -> blob hash."""
    rows = session.execute(
        select(Source.path, Source.blob).where(Source.run_id == run_id).order_by(Source.pk)
    )
    return {path: blob for path, blob in rows}


def matched_sources(session: Session, run_id: str, rendered: render.Analysis) -> list[dict[str, Any]]:
    """Each file the IR's locations name (most lines first), with the uploaded file it matches."""
    sources = run_sources(session, run_id)
    # the user's files reached through generated ones first; their panes number after the IR's files,
    # whose numbers the IR lines carry (data-py="F:L")
    matched = _reached_sources(session, sources, rendered)
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


def _reached_sources(session: Session, sources: dict[str, str], rendered: render.Analysis) -> list[dict[str, Any]]:
    """The user's files that the IR reaches through generated ones (a Helion kernel through the Triton
    code Helion generated from it), each with its IR lines per line (`mapped`)."""
    if not sources:
        return []
    generated = GeneratedSources(session, sources)
    chained = chained_by_source(rendered.by_source, generated)
    if not chained:
        return []
    # each user's line -> the IR's own keys (data-py="F:L") of the generated lines it became, for the page's script
    keys: dict[str, dict[int, list[str]]] = {}
    for position, loc_file in enumerate(rendered.loc_files):
        found = generated.of(loc_file)
        for (file, line), generated_lines in (found.by_line.items() if found else ()):
            keys.setdefault(file, {}).setdefault(line, []).extend(
                f"{position}:{number}" for number in generated_lines if (loc_file, number) in rendered.by_source)
    reached = []
    for file, mapped in chained.items():
        path = file if file in sources else None
        reached.append({"index": len(rendered.loc_files) + len(reached), "file": file, "name": render.basename(file),
                        "path": path, "blob": sources.get(path) if path else None,
                        "lines": sum(len(lines) for lines in mapped.values()),
                        "mapped": {line: len(lines) for line, lines in mapped.items()},
                        "keys": {line: " ".join(found) for line, found in keys.get(file, {}).items()}})
    return sorted(reached, key=lambda item: -item["lines"])


def ir_fields(
    session: Session,
    compilation: Compilation,
    rendered: render.Analysis,
    load_text: render.TextLoader,
    urls: Urls,
    full: bool,
) -> dict[str, Any]:
    """The fields every IR page shares. ``full`` adds the JSON-only ones (the text and one
    location per line), which the HTML page shows as rendered lines instead."""
    matched = matched_sources(session, compilation.run_id, rendered)
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
    fields["conversions"] = conversions(rendered, load_text, compilation.target or "")
    fields["conversion_counts"] = summary(fields["conversions"])
    fields["shared_accesses"] = shared_accesses(rendered, load_text, compilation.target or "")
    fields["shared_access_counts"] = conflict_counts(fields["shared_accesses"])
    if full:
        fields["text"] = load_text() or ""
        fields["locs"] = rendered.locs_json()
    return fields


def conversions(rendered: render.Analysis, load_text: render.TextLoader, target: str) -> list[dict[str, Any]]:
    """Each ttg.convert_layout with what its lowering costs (app/layouts/cvt_costs.py); the
    compilation's target sizes scratch where the module names none."""
    if rendered.kind != "mlir":
        return []
    text = load_text() or ""
    if "convert_layout" not in text:
        return []
    return convert_costs(io.StringIO(text), target)


def shared_accesses(rendered: render.Analysis, load_text: render.TextLoader, target: str) -> list[dict[str, Any]]:
    """Each local_load/local_store/local_alloc with a value/async copy into shared memory with its
    bank conflicts (app/layouts/smem_costs.py), as Triton 3.9 counts them."""
    if rendered.kind != "mlir":
        return []
    text = load_text() or ""
    if "local_" not in text and "async_copy_global_to_local" not in text:
        return []
    return smem_accesses(io.StringIO(text), target)


def ir_page(
    session: Session,
    compilation: Compilation,
    rendered: render.Analysis,
    urls: Urls,
    lines_url: Callable[[int, int], str],
    show_all: bool = False,
    load_text: render.TextLoader | None = None,
) -> dict[str, Any]:
    """What only the HTML page needs: the first page of lines (all of them with ``?all=1``) and
    where to fetch the rest, the source panes, the legends."""
    matched = matched_sources(session, compilation.run_id, rendered)
    panes = []
    for item in matched[:MAX_SOURCE_PANES]:
        pane = dict(item)
        pane["map_url"] = urls.source_map(compilation.run_id, compilation.ordinal)
        if item["blob"] is not None:
            source = render.render_python(item["blob"], text_loader(session, item["blob"]))
            mapped = item.get("mapped") or {
                line: len(ir) for (file, line), ir in rendered.by_source.items() if file == item["file"]
            }
            first = min(mapped) if mapped else 1
            pane["first_line"] = first
            keys = item.get("keys") or {}
            rows = [
                (
                    number,
                    Markup(code),  # escaped by the renderer
                    mapped.get(number, 0),
                    render.line_colour(item["file"], number) if number in mapped else None,
                    keys.get(number),  # a file reached through generated code: the IR keys of its lines
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
    inspect = _inspect_urls(drawn, load_text, urls) if drawn and load_text else {}
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
             "inspect": inspect.get(alias),
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



def _inspect_urls(drawn: dict[str, str], load_text: render.TextLoader, urls: Urls) -> dict[str, dict[str, str]]:
    """alias -> the inspector at the shape and element type of the alias's first use in a type."""
    uses = first_uses((load_text() or "").splitlines(), drawn)
    return {
        alias: {"url": urls.layout(drawn[alias], use["shape"], elem=use["elem"]),
                "what": "×".join(map(str, use["shape"])) + " " + use["elem"]}
        for alias, use in uses.items()
    }
