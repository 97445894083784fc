"""Diffs of two snapshots: `/diff/A..B` and its `.json` twin, plus the row fragments htmx loads.

A and B are public snapshot ids (`{run}-{ordinal}-{index}`), possibly from different runs. The
diff itself is :func:`app.diff.diff_texts`, cached by (blob A, blob B, compared options), or for a
large adjacent pair the segments the background stored (app/insight/adjacent_diffs.py); the
page shows hunks with `context` unchanged rows around each change. Rows beyond a budget, and the
unchanged runs between hunks, come later as fragments (`/diff/A..B/rows?start=&end=`), so a
20,000-line diff opens as fast as a small one.

What a page shows is a function of two immutable blobs, the options and this code, so every
response carries an ETag and `If-None-Match` gets a 304.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.diff import DiffCache, DiffOptions, DiffResult, diff_texts
from app.insight import adjacent_diffs
from app.insight.page_data import snapshot_dict
from app.insight.pass_attribution import dump_passes
from app.layouts.aliases import alias_definitions, drawable
from app.store.blobs import BlobReader
from app.store.models import Banner, Compilation, Run, Snapshot
from app.urls import Urls, parse_int, parse_snapshot_id, snapshot_id
from app.web.errors import error_json
from app.web.page_cache import cache_response, cached_response
from app.web.responder import SessionDep, UrlsDep, json_twin_url, page_context, render_block, templates
from app.web.views import diff_rows as row_rendering
from app.web.views.diff_rows import (
    VIEWS,
    PageOptions,
    Piece,
    RowRenderer,
    gap_piece,
    hunk_header,
    ignore_toggles,
    page_pieces,
    parse_options,
)
from app.web.views.replay import reproducer_links

router = APIRouter()

blob_reader = BlobReader(capacity=8)
diff_cache = DiffCache(capacity=32)

CONTEXT_CHOICES = (3, 5, 10, 25)
EXPAND_STEP = 20  # rows an "expand up/down" click reveals in a long unchanged run

_ROOT = Path(__file__).resolve().parents[3]


def _build_digest() -> str:
    """This module, the diff algorithm and the page's template and assets: part of every ETag."""
    digest = hashlib.sha256(render.RENDER_VERSION.encode())
    for path in (
        Path(__file__),
        *sorted((_ROOT / "app" / "diff").glob("*.py")),
        _ROOT / "app" / "web" / "views" / "diff_rows.py",
        _ROOT / "templates" / "_diff_pieces.html",
        _ROOT / "templates" / "diff.html",
        _ROOT / "templates" / "base.html",
        _ROOT / "static" / "diff.css",
        _ROOT / "static" / "diff.js",
        _ROOT / "static" / "layout-link.js",
        _ROOT / "app" / "layouts" / "aliases.py",
    ):
        try:
            digest.update(path.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()[:12]


_BUILD = _build_digest()


# --------------------------------------------------------------------------- request parsing


class DiffNotFound(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Side:
    """One side of a diff: the snapshot, its compilation and run, and the id it was asked by."""

    id: str
    snapshot: Snapshot
    compilation: Compilation
    run: Run

    def info(self, urls: Urls) -> dict[str, Any]:
        compilation = self.compilation
        data = snapshot_dict(compilation.run_id, compilation.ordinal, self.snapshot, urls)
        data.update(
            {
                "run": compilation.run_id,
                "run_title": self.run.title or compilation.run_id,
                "run_url": urls.run(compilation.run_id),
                "compilation": compilation.ordinal,
                "compilation_url": urls.compilation(compilation.run_id, compilation.ordinal),
                "kernel": compilation.kernel,
                "target": compilation.target,
            }
        )
        return data


def _parse_spec(spec: str) -> tuple[str, str, bool]:
    """`A..B` or `A..B.json` → (A, B, wants JSON)."""
    wants_json = spec.endswith(".json")
    spec = spec.removesuffix(".json")
    left, sep, right = spec.partition("..")
    if not sep or not left or not right:
        raise DiffNotFound(f"not a diff: {spec!r} (expected /diff/A..B with two snapshot ids)")
    return left, right, wants_json


def _load_side(session: Session, public_id: str) -> Side:
    parsed = parse_snapshot_id(public_id)
    if parsed is None:
        raise DiffNotFound(f"not a snapshot id: {public_id!r} (expected RUN-COMPILATION-INDEX)")
    run_id, ordinal, index = parsed
    row = session.execute(
        select(Snapshot, Compilation, Run)
        .join(Compilation, Snapshot.compilation_pk == Compilation.pk)
        .join(Run, Compilation.run_id == Run.id)
        .where(Compilation.run_id == run_id, Compilation.ordinal == ordinal, Snapshot.index == index)
    ).first()
    if row is None:
        raise DiffNotFound(f"no snapshot {public_id}: its run, compilation or pass does not exist")
    snapshot, compilation, run = row
    return Side(public_id, snapshot, compilation, run)


# --------------------------------------------------------------------------- the diff


def compute_diff(session: Session, a: Side, b: Side, options: DiffOptions) -> DiffResult:
    key = (a.snapshot.blob, b.snapshot.blob, options.compare_key)

    def compute() -> DiffResult:
        a_text = blob_reader.text(session, a.snapshot.blob) or ""
        b_text = blob_reader.text(session, b.snapshot.blob) or ""
        if options.compare_key == DiffOptions().compare_key and adjacent_diffs.worth_storing(
            a.snapshot.line_count, b.snapshot.line_count
        ):  # a large pair the background may have diffed already
            stored = adjacent_diffs.stored_result(session, a.snapshot.blob, b.snapshot.blob, a_text, b_text)
            if stored is not None:
                return stored
        return diff_texts(a_text, b_text, DiffOptions(options.loc, options.ssa, options.alias))

    return diff_cache.get(key, compute)


def hunks_json(result: DiffResult, context: int) -> list[dict[str, Any]]:
    hunks = []
    a_lines, b_lines = result.a_lines, result.b_lines
    for hunk in result.hunks(context):
        hunks.append(
            {
                "a_start": hunk.a_start,
                "a_len": hunk.a_len,
                "b_start": hunk.b_start,
                "b_len": hunk.b_len,
                "lines": [
                    {
                        "op": row.op,
                        "a_no": row.a_no,
                        "b_no": row.b_no,
                        "a": a_lines[row.a_no - 1] if row.a_no is not None else None,
                        "b": b_lines[row.b_no - 1] if row.b_no is not None else None,
                        "ignored": row.ignored,
                    }
                    for row in result.iter_rows(hunk.row_start, hunk.row_end)
                ],
            }
        )
    return hunks


def _adjacent(a: Side, b: Side) -> bool:
    """Whether B is compared with A: A is the previous snapshot of B's scope (module, function, loop)."""
    return a.compilation.pk == b.compilation.pk and b.snapshot.base_index == a.snapshot.index


def _effect_pass(session: Session, a: Side, b: Side) -> str | None:
    """The pass whose work an adjacent pair shows: the one that ran between A and B."""
    if not _adjacent(a, b):
        return None
    key = (b.compilation.pk, b.snapshot.index)
    return dump_passes(session, [b.compilation.pk], {key})[key]["introduced_by"]


def _navigation(session: Session, a: Side, b: Side, urls: Urls, options: PageOptions) -> dict[str, Any]:
    """Neighbouring pairs when B is compared with A (A is the previous snapshot of B's scope): each
    pair is a snapshot and its base, so the steps go from one like-with-like diff to the next."""
    nav: dict[str, Any] = {
        "adjacent": False,
        "prev": None,
        "next": None,
        "next_changed": None,
        "prev_changed": None,
        "position": None,
        "count": None,
    }
    if not _adjacent(a, b):
        return nav
    rows = session.execute(
        select(Snapshot.index, Banner.pass_name, Snapshot.changed, Snapshot.base_index)
        .join(Snapshot.banner)
        .where(Snapshot.compilation_pk == a.compilation.pk)
        .order_by(Snapshot.index)
    ).all()
    names = {row.index: row.pass_name for row in rows}
    made_by = dump_passes(session, [a.compilation.pk])
    pairs = [row for row in rows if row.base_index is not None and row.base_index in names]  # by B's index
    run_id, ordinal = a.compilation.run_id, a.compilation.ordinal
    query = options.query()

    def pair(position: int) -> dict[str, Any] | None:
        if not 0 <= position < len(pairs):
            return None
        row = pairs[position]
        url = urls.diff(snapshot_id(run_id, ordinal, row.base_index), snapshot_id(run_id, ordinal, row.index)) + query
        made = made_by[(a.compilation.pk, row.index)]["introduced_by"] or names[row.base_index]
        return {"index": row.base_index, "pass": made, "url": url, "changed": bool(row.changed)}

    here = next(position for position, row in enumerate(pairs) if row.index == b.snapshot.index)
    nav.update(adjacent=True, prev=pair(here - 1), next=pair(here + 1), position=here + 1, count=len(pairs))
    nav["next_changed"] = next((pair(k) for k in range(here + 1, len(pairs)) if pairs[k].changed), None)
    nav["prev_changed"] = next((pair(k) for k in range(here - 1, -1, -1) if pairs[k].changed), None)
    return nav


def page_data(
    session: Session, a: Side, b: Side, result: DiffResult, options: PageOptions, urls: Urls
) -> dict[str, Any]:
    """What the page and its JSON twin share."""
    hunks = result.hunks(options.diff.context)
    stats = result.stats
    url = urls.diff(a.id, b.id) + options.query()
    return {
        "a": a.info(urls),
        "b": b.info(urls),
        "options": options.as_dict(),
        "stats": {
            "added": stats["added"],
            "removed": stats["removed"],
            "changed_lines": stats["changed_lines"],
            "hunks": len(hunks),
            "changes": stats["changes"],
        },
        "identical": result.identical,
        "notes": result.notes,  # how the comparison went beyond the options (print forms of the two sides)
        "pass": _effect_pass(session, a, b),
        "url": url,
        "swap_url": urls.diff(b.id, a.id) + options.query(),
        "navigation": _navigation(session, a, b, urls, options),
        "rerun": _rerun(a, b, urls),
    }


def _rerun(a: Side, b: Side, urls: Urls) -> dict[str, Any] | None:
    """The "Re-run this pass" panel's links, where A is an MLIR pass's dump and B a later one of it."""
    if a.compilation.pk != b.compilation.pk or a.snapshot.kind != "mlir" or b.snapshot.index <= a.snapshot.index:
        return None
    run_id, ordinal, index = a.compilation.run_id, a.compilation.ordinal, a.snapshot.index
    return {"pass": a.snapshot.pass_name, "index": index, **reproducer_links(urls, run_id, ordinal, index),
            "url": urls.snapshot_replay(run_id, ordinal, index)}


# --------------------------------------------------------------------------- responses


def _etag(a: Side, b: Side, options: PageOptions, variant: str) -> str:
    titles = (a.run.title or "", b.run.title or "")  # shown on the page, and editable
    key = "|".join((a.snapshot.blob, b.snapshot.blob, a.id, b.id, *titles, repr(options), variant, _BUILD))
    return '"d' + hashlib.sha256(key.encode()).hexdigest()[:32] + '"'


def _runs(a: Side, b: Side) -> tuple[str, str]:
    """The runs a diff shows: its cached copy lives while both do (see app/web/page_cache.py)."""
    return a.compilation.run_id, b.compilation.run_id


def _cache_headers(tag: str) -> dict[str, str]:
    return {"ETag": tag, "Cache-Control": "private, max-age=0, must-revalidate", "Vary": "HX-Request"}


def _not_found(request: Request, urls: Urls, message: str, wants_json: bool) -> Response:
    if wants_json:
        return error_json(message, 404)
    return templates.TemplateResponse(
        request,
        "diff.html",
        page_context(request, {"error": message}),
        status_code=404,
    )


@router.get("/diff/{spec}")
def diff_page(request: Request, spec: str, session: SessionDep, urls: UrlsDep) -> Response:
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    wants_json = spec.endswith(".json")
    try:
        left, right, wants_json = _parse_spec(spec)
        a, b = _load_side(session, left), _load_side(session, right)
    except DiffNotFound as missing:
        return _not_found(request, urls, missing.message, wants_json)
    options = parse_options(request)
    htmx = request.headers.get("hx-request") == "true"
    tag = _etag(a, b, options, "json" if wants_json else ("htmx" if htmx else "page"))
    if render.not_modified(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers=_cache_headers(tag))
    result = compute_diff(session, a, b, options.diff)
    data = page_data(session, a, b, result, options, urls)
    headers = _cache_headers(tag)
    runs = _runs(a, b)
    if wants_json:
        data["hunks"] = hunks_json(result, options.diff.context)
        return cache_response(request, session, runs, JSONResponse(data, headers=headers))

    json_url = json_twin_url(request)
    page = _page_model(result, a, b, options, urls, data)
    context = page_context(request, data, page, json_url)
    headers["Link"] = f'<{json_url}>; rel="alternate"; type="application/json"'
    if htmx:
        response = HTMLResponse(render_block("diff.html", "main", context), headers=headers)
    else:
        response = templates.TemplateResponse(request, "diff.html", context, headers=headers)
    return cache_response(request, session, runs, response)


@router.get("/diff/{spec}/rows")
def diff_rows(request: Request, spec: str, session: SessionDep, urls: UrlsDep) -> Response:
    """Rows `start`..`end` of the diff as `<tbody>` fragments; a gap keeps what stays hidden."""
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    try:
        left, right, _ = _parse_spec(spec)
        a, b = _load_side(session, left), _load_side(session, right)
    except DiffNotFound as missing:
        return _not_found(request, urls, missing.message, False)
    options = parse_options(request)
    tag = _etag(a, b, options, "rows?" + request.url.query)
    if render.not_modified(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers=_cache_headers(tag))
    result = compute_diff(session, a, b, options.diff)

    def number(name: str, default: int) -> int:
        value = parse_int(request.query_params.get(name, ""))
        return default if value is None else value

    start = min(number("start", 0), result.rows)
    end = max(min(number("end", start + row_rendering.CHUNK_ROWS), result.rows, start + 4 * row_rendering.CHUNK_ROWS), start)
    gap_start, gap_end = number("gap_start", start), number("gap_end", end)
    renderer = _renderer(result, a, b, options, urls)
    pieces = []
    if gap_start < start:
        pieces.append(gap_piece(result, gap_start, start, ""))
    pieces.append(Piece("rows", start, end, renderer.rows(start, end)))
    if end < gap_end <= result.rows:
        following = next((h for h in result.hunks(options.diff.context) if h.row_start == gap_end), None)
        header = hunk_header(result, following.row_start, following.row_end) if following else ""
        pieces.append(gap_piece(result, end, gap_end, header))
    headers = _cache_headers(tag)
    if request.headers.get("hx-request") != "true":
        # followed as a plain link (no JavaScript): those rows inside the whole page
        data = page_data(session, a, b, result, options, urls)
        page = _page_model(result, a, b, options, urls, data, pieces)
        page["partial"] = {"first": start + 1, "last": end, "rows": result.rows}
        json_url = urls.diff(a.id, b.id) + ".json" + options.query()
        context = page_context(request, data, page, json_url)
        headers["Link"] = f'<{json_url}>; rel="alternate"; type="application/json"'
        response = templates.TemplateResponse(request, "diff.html", context, headers=headers)
        return cache_response(request, session, _runs(a, b), response)
    base = urls.diff(a.id, b.id)
    context = {
        "pieces": pieces,
        "page": {
            "view": options.view,
            "rows_url": base + "/rows" + options.query(),
            "expand_step": EXPAND_STEP,
        },
        "urls": urls,
    }
    response = HTMLResponse(render_block("diff.html", "pieces", context), headers=headers)
    return cache_response(request, session, _runs(a, b), response)


def _renderer(result: DiffResult, a: Side, b: Side, options: PageOptions, urls: Urls) -> RowRenderer:
    return RowRenderer(
        result,
        render.snapshot_kind(a.snapshot.kind),
        render.snapshot_kind(b.snapshot.kind),
        options,
        urls.snapshot(a.compilation.run_id, a.compilation.ordinal, a.snapshot.index),
        urls.snapshot(b.compilation.run_id, b.compilation.ordinal, b.snapshot.index),
    )


def _page_model(
    result: DiffResult,
    a: Side,
    b: Side,
    options: PageOptions,
    urls: Urls,
    data: dict[str, Any],
    pieces: list[Piece] | None = None,
) -> dict[str, Any]:
    """What only the HTML needs: rendered rows, option links, labels."""
    renderer = _renderer(result, a, b, options, urls)
    base = urls.diff(a.id, b.id)
    diff_options = options.diff

    def link(**changes: Any) -> str:
        return base + options.query(**changes)

    toggles = ignore_toggles(diff_options, link)
    contexts = [
        {"label": str(n), "url": link(context=n), "on": diff_options.context == n} for n in CONTEXT_CHOICES
    ]
    contexts.append({"label": "all", "url": link(context=-1), "on": diff_options.context < 0})
    same_compilation = a.compilation.pk == b.compilation.pk
    same_run = a.compilation.run_id == b.compilation.run_id
    return {
        "view": options.view,
        "views": [
            {"name": name, "label": name.title(), "url": link(view=name), "on": name == options.view}
            for name in VIEWS
        ],
        "other_view_url": link(view="unified" if options.view == "split" else "split"),
        "toggles": toggles,
        "contexts": contexts,
        "pieces": pieces if pieces is not None else page_pieces(result, renderer, diff_options.context),
        "partial": None,
        "page_url": data["url"],
        "rows_url": base + "/rows" + options.query(),
        "expand_step": EXPAND_STEP,
        "changes": len(result.changes),
        "same_compilation": same_compilation,
        "same_run": same_run,
        "a_lines": len(result.a_lines),
        "b_lines": len(result.b_lines),
        "hidden_ignored": _ignored_summary(result),
        "layout_aliases": layout_aliases(result),
    }


def layout_aliases(result: DiffResult) -> Markup | None:
    """Each side's drawable layout aliases (expanded), for layout-link.js: a click on an alias in a
    tensor type opens the layout inspector at that shape. Also shipped with each comparison row's
    preview (app/web/views/compare.py), whose two sides have their own aliases."""
    sides = {side: drawable(alias_definitions(lines)) for side, lines in (("a", result.a_lines),
                                                                           ("b", result.b_lines))}
    if not any(sides.values()):
        return None
    return Markup(json.dumps(sides, separators=(",", ":")).replace("<", "\\u003c"))


def _ignored_summary(result: DiffResult) -> int:
    """How many rows differ only in what the options ignore (shown muted, not counted)."""
    count = 0
    for segment in result.segments:
        if segment.ignored:
            count += segment.rows
    return count


__all__ = ["diff_cache", "hunks_json", "layout_aliases", "page_data", "parse_options", "router"]
