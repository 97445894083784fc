"""Diffs of two snapshots: `/diff/A..B` and its `.json` twin, plus the row fragments htmx loads.

A and B are public snapshot ids (`{run}-{ordinal}-{index}`), possibly from different runs. The
diff itself is :func:`app.diff.diff_texts`, cached by (blob A, blob B, compared options); the
page shows hunks with `context` unchanged rows around each change. Rows beyond a budget, and the
unchanged runs between hunks, come later as fragments (`/diff/A..B/rows?start=&end=`), so a
20,000-line diff opens as fast as a small one.

What a page shows is a function of two immutable blobs, the options and this code, so every
response carries an ETag and `If-None-Match` gets a 304.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.blobs import BlobReader
from app.diff import (
    DEFAULT_CONTEXT,
    DELETE,
    EQUAL,
    INSERT,
    MAX_CONTEXT,
    REPLACE,
    DiffCache,
    DiffOptions,
    DiffResult,
    Row,
    diff_texts,
    inline_changes,
    loc_spans,
)
from app.errors import error_json
from app.layouts.aliases import alias_definitions, drawable
from app.models import Compilation, Run, Snapshot
from app.page_cache import cache_response, cached_response
from app.queries import snapshot_dict
from app.urls import Urls, parse_snapshot_id, snapshot_id
from app.web import SessionDep, UrlsDep, templates

router = APIRouter()

blob_reader = BlobReader(capacity=8)
diff_cache = DiffCache(capacity=32)

VIEWS = ("split", "unified")
CONTEXT_CHOICES = (3, 5, 10, 25)
# Rows rendered with the page, about three screens; the next chunk loads right after the page, the
# rest as they scroll into view. A row costs ~0.2-0.3 ms cold (highlighting and inline changes of
# long lines), so the 250 shipped before took 40-80 ms.
INLINE_ROWS = 120
CHUNK_ROWS = 250  # rows per lazily loaded chunk
EXPAND_STEP = 20  # rows an "expand up/down" click reveals in a long unchanged run

_ROOT = Path(__file__).resolve().parents[2]


def _build_digest() -> str:
    """This module, the diff algorithm and the page's template and assets: part of every ETag."""
    digest = hashlib.sha256(render.RENDER_VERSION.encode())
    for path in (
        Path(__file__),
        _ROOT / "app" / "diff.py",
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


@dataclass(frozen=True)
class PageOptions:
    """The diff options plus how to show them (split or unified)."""

    diff: DiffOptions
    view: str = "split"

    def query(self, **changes: Any) -> str:
        """The query string of these options (defaults left out), with `changes` applied."""
        values = {
            "loc": self.diff.loc,
            "ssa": self.diff.ssa,
            "alias": self.diff.alias,
            "context": self.diff.context,
            "view": self.view,
        }
        values.update(changes)
        params: dict[str, str] = {}
        for name in ("loc", "ssa", "alias"):
            if values[name]:
                params[name] = "1"
        if values["context"] != DEFAULT_CONTEXT:
            params["context"] = "all" if values["context"] < 0 else str(values["context"])
        if values["view"] != "split":
            params["view"] = values["view"]
        return ("?" + urlencode(params)) if params else ""

    def as_dict(self) -> dict[str, Any]:
        return {**self.diff.as_dict(), "view": self.view}


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def parse_options(request: Request) -> PageOptions:
    params = request.query_params
    context_text = (params.get("context") or "").strip().lower()
    if context_text == "all":
        context = -1
    elif context_text.isdigit():
        context = min(int(context_text), MAX_CONTEXT)
    else:
        context = DEFAULT_CONTEXT
    view = params.get("view", "split")
    return PageOptions(
        DiffOptions(
            loc=_flag(params.get("loc")),
            ssa=_flag(params.get("ssa")),
            alias=_flag(params.get("alias")),
            context=context,
        ),
        view if view in VIEWS else "split",
    )


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


def _effect_pass(a: Side, b: Side) -> str | None:
    """The pass whose work an adjacent pair shows: A is the IR before it (or B the IR after it)."""
    if a.compilation.pk != b.compilation.pk or b.snapshot.index != a.snapshot.index + 1:
        return None
    return b.snapshot.pass_name if b.snapshot.when == "after" else a.snapshot.pass_name


def _navigation(session: Session, a: Side, b: Side, urls: Urls, options: PageOptions) -> dict[str, Any]:
    """Neighbouring pairs when A and B are consecutive snapshots of one compilation."""
    nav: dict[str, Any] = {
        "adjacent": False,
        "prev": None,
        "next": None,
        "next_changed": None,
        "prev_changed": None,
        "position": None,
        "count": None,
    }
    if a.compilation.pk != b.compilation.pk or b.snapshot.index != a.snapshot.index + 1:
        return nav
    passes = session.execute(
        select(Snapshot.index, Snapshot.pass_name, Snapshot.changed)
        .where(Snapshot.compilation_pk == a.compilation.pk)
        .order_by(Snapshot.index)
    ).all()
    changed = {row.index: row.changed for row in passes}
    names = {row.index: row.pass_name for row in passes}
    run_id, ordinal = a.compilation.run_id, a.compilation.ordinal
    query = options.query()

    def pair(i: int) -> dict[str, Any] | None:
        if i not in names or i + 1 not in names:
            return None
        url = urls.diff(snapshot_id(run_id, ordinal, i), snapshot_id(run_id, ordinal, i + 1)) + query
        return {"index": i, "pass": names[i], "url": url, "changed": bool(changed.get(i + 1))}

    i = a.snapshot.index
    nav.update(
        adjacent=True, prev=pair(i - 1), next=pair(i + 1), position=i + 1, count=max(len(passes) - 1, 0)
    )
    nav["next_changed"] = next((pair(k) for k in range(i + 1, len(passes)) if changed.get(k + 1)), None)
    nav["prev_changed"] = next((pair(k) for k in range(i - 1, -1, -1) if changed.get(k + 1)), None)
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
        "pass": _effect_pass(a, b),
        "url": url,
        "swap_url": urls.diff(b.id, a.id) + options.query(),
        "navigation": _navigation(session, a, b, urls, options),
    }


# --------------------------------------------------------------------------- HTML rows


_HTML_PIECES = re.compile(r"<[^>]*>|&[#\w]+;|[^<&]+")


def _mark_html(code: str, spans: list[tuple[int, int]], css: str) -> str:
    """Wrap the characters in `spans` (offsets into the text) of highlighted HTML in `<mark>`.

    The HTML is a highlighter's output: text, entities and `<span>`/`<a>` tags. A mark is closed
    before every tag inside it and reopened after, so the nesting stays valid.
    """
    if not spans:
        return code
    opening, closing = f'<mark class="{css}">', "</mark>"
    out: list[str] = []
    append = out.append
    offset = 0  # characters of text so far
    inside = False
    edges = [edge for span in spans for edge in span]  # sorted, alternately opening and closing
    edge_index = 0
    next_edge = edges[0]
    for piece in _HTML_PIECES.findall(code):
        first = piece[0]
        if first == "<":
            if inside:
                append(closing)
                append(piece)
                append(opening)
            else:
                append(piece)
            continue
        size = 1 if first == "&" and piece[-1] == ";" else len(piece)
        if next_edge >= offset + size:
            append(piece)  # no edge at its start or inside it
            offset += size
            continue
        if size == 1:  # an entity or one character, with an edge at its start
            while next_edge == offset:
                inside = not inside
                append(opening if inside else closing)
                edge_index += 1
                next_edge = edges[edge_index] if edge_index < len(edges) else 1 << 60
            append(piece)
            offset += 1
            continue
        start = 0
        while start < size:
            while next_edge == offset + start:
                inside = not inside
                append(opening if inside else closing)
                edge_index += 1
                next_edge = edges[edge_index] if edge_index < len(edges) else 1 << 60
            end = min(size, next_edge - offset)
            append(piece[start:end])
            start = end
        offset += size
    while next_edge <= offset and edge_index < len(edges):
        inside = not inside
        append(opening if inside else closing)
        edge_index += 1
        next_edge = edges[edge_index] if edge_index < len(edges) else 1 << 60
    if inside:
        append(closing)
    return "".join(out).replace(opening + closing, "")


@dataclass
class Cell:
    no: int | None = None
    html: Markup = field(default_factory=Markup)
    css: str = "nil"  # eq, del, ins, ign-del, ign-ins; nil: no line on this side


@dataclass
class ViewRow:
    css: str  # eq, chg, ign
    left: Cell = field(default_factory=Cell)
    right: Cell = field(default_factory=Cell)
    change: int | None = None
    first: bool = False
    sign: str = " "  # unified: the row's one cell is `right` (or `left` for a deletion)


class RowRenderer:
    """Turns diff rows into highlighted, marked table rows for one view."""

    def __init__(
        self, result: DiffResult, a_kind: str, b_kind: str, options: PageOptions, a_url: str, b_url: str
    ):
        self.result = result
        self.a_kind, self.b_kind = a_kind, b_kind
        self.options = options
        self.a_url, self.b_url = a_url, b_url
        self.change_starts = [start for start, _ in result.changes]

    def _change_of(self, row_index: int) -> int | None:
        k = bisect_right(self.change_starts, row_index) - 1
        if k >= 0 and row_index < self.result.changes[k][1]:
            return k + 1
        return None

    def _code(
        self, line: str, kind: str, spans: list[tuple[int, int]] | None = None, css: str = ""
    ) -> Markup:
        code = render.highlight_line(line, kind) if line else ""
        if spans:
            code = _mark_html(code, spans, css)
        return Markup(code)

    def _pair_marks(self, a_line: str, b_line: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        hide = None if self.options.diff.loc else (loc_spans(a_line), loc_spans(b_line))
        diff_options = self.options.diff
        renames = self.result.renames if diff_options.ssa or diff_options.alias else None
        return inline_changes(a_line, b_line, hide, renames, rename_definitions=diff_options.ssa)

    def rows(self, start: int, end: int) -> list[ViewRow]:
        raw = list(self.result.iter_rows(start, end))
        numbered = [(start + k, row) for k, row in enumerate(raw)]
        if self.options.view == "unified":
            return self._unified(numbered)
        return self._split(numbered)

    # -- split ---------------------------------------------------------------------------------
    def _split(self, numbered: list[tuple[int, Row]]) -> list[ViewRow]:
        a_lines, b_lines = self.result.a_lines, self.result.b_lines
        out: list[ViewRow] = []
        seen: set[int] = set()
        k = 0
        while k < len(numbered):
            index, row = numbered[k]
            change = self._change_of(index)
            first = change is not None and change not in seen
            if change is not None:
                seen.add(change)
            if row.op == EQUAL:
                a_line, b_line = a_lines[row.a_no - 1], b_lines[row.b_no - 1]
                css = "ign" if row.ignored else "eq"
                out.append(
                    ViewRow(
                        css,
                        Cell(row.a_no, self._code(a_line, self.a_kind), css),
                        Cell(row.b_no, self._code(b_line, self.b_kind), css),
                    )
                )
                k += 1
            elif row.op == REPLACE:
                a_line, b_line = a_lines[row.a_no - 1], b_lines[row.b_no - 1]
                a_spans, b_spans = self._pair_marks(a_line, b_line)
                out.append(
                    ViewRow(
                        "chg",
                        Cell(row.a_no, self._code(a_line, self.a_kind, a_spans, "d"), "del"),
                        Cell(row.b_no, self._code(b_line, self.b_kind, b_spans, "i"), "ins"),
                        change,
                        first,
                    )
                )
                k += 1
            else:
                # a run of deletions next to a run of insertions: side by side, like a replacement
                ignored = row.ignored
                runs: dict[str, list[Row]] = {DELETE: [], INSERT: []}
                for op in (row.op, INSERT if row.op == DELETE else DELETE):
                    while k < len(numbered):
                        item_index, item = numbered[k]
                        if item.op != op or item.ignored != ignored or self._change_of(item_index) != change:
                            break
                        runs[op].append(item)
                        k += 1
                deletes, inserts = runs[DELETE], runs[INSERT]
                for m in range(max(len(deletes), len(inserts))):
                    left, right = Cell(), Cell()
                    if m < len(deletes):
                        left = Cell(
                            deletes[m].a_no,
                            self._code(a_lines[deletes[m].a_no - 1], self.a_kind),
                            "ign-del" if ignored else "del",
                        )
                    if m < len(inserts):
                        right = Cell(
                            inserts[m].b_no,
                            self._code(b_lines[inserts[m].b_no - 1], self.b_kind),
                            "ign-ins" if ignored else "ins",
                        )
                    out.append(
                        ViewRow(
                            "ign" if ignored else "chg",
                            left,
                            right,
                            None if ignored else change,
                            first and m == 0,
                        )
                    )
        return out

    # -- unified -------------------------------------------------------------------------------
    def _unified(self, numbered: list[tuple[int, Row]]) -> list[ViewRow]:
        a_lines, b_lines = self.result.a_lines, self.result.b_lines
        out: list[ViewRow] = []
        seen: set[int] = set()
        k = 0
        while k < len(numbered):
            index, row = numbered[k]
            change = self._change_of(index)
            first = change is not None and change not in seen
            if change is not None:
                seen.add(change)
            if row.op == EQUAL:
                css = "ign" if row.ignored else "eq"
                b_line = b_lines[row.b_no - 1]
                out.append(
                    ViewRow(
                        css,
                        Cell(row.a_no, Markup(""), css),
                        Cell(row.b_no, self._code(b_line, self.b_kind), css),
                        sign="≈" if row.ignored else " ",
                    )
                )
                k += 1
                continue
            if row.op == REPLACE:
                run = []
                while (
                    k < len(numbered)
                    and numbered[k][1].op == REPLACE
                    and self._change_of(numbered[k][0]) == change
                ):
                    run.append(numbered[k][1])
                    k += 1
                marks = [self._pair_marks(a_lines[r.a_no - 1], b_lines[r.b_no - 1]) for r in run]
                for m, r in enumerate(run):
                    code = self._code(a_lines[r.a_no - 1], self.a_kind, marks[m][0], "d")
                    out.append(
                        ViewRow(
                            "chg",
                            Cell(r.a_no, code, "del"),
                            Cell(None, Markup(""), "del"),
                            change,
                            first and m == 0,
                            "-",
                        )
                    )
                for m, r in enumerate(run):
                    code = self._code(b_lines[r.b_no - 1], self.b_kind, marks[m][1], "i")
                    out.append(
                        ViewRow(
                            "chg",
                            Cell(None, Markup(""), "ins"),
                            Cell(r.b_no, code, "ins"),
                            change,
                            False,
                            "+",
                        )
                    )
                continue
            ignored = row.ignored
            css = "ign" if ignored else "chg"
            if row.op == DELETE:
                code = self._code(a_lines[row.a_no - 1], self.a_kind)
                cell_css = "ign-del" if ignored else "del"
                out.append(
                    ViewRow(
                        css,
                        Cell(row.a_no, code, cell_css),
                        Cell(None, Markup(""), cell_css),
                        None if ignored else change,
                        first,
                        "-",
                    )
                )
            else:
                code = self._code(b_lines[row.b_no - 1], self.b_kind)
                cell_css = "ign-ins" if ignored else "ins"
                out.append(
                    ViewRow(
                        css,
                        Cell(None, Markup(""), cell_css),
                        Cell(row.b_no, code, cell_css),
                        None if ignored else change,
                        first,
                        "+",
                    )
                )
            k += 1
        return out


# --------------------------------------------------------------------------- page pieces


@dataclass
class Piece:
    """A `<tbody>` of the table: rows, a collapsed unchanged run, or a chunk still to load."""

    kind: str  # "rows" | "gap" | "lazy"
    start: int
    end: int
    rows: list[ViewRow] = field(default_factory=list)
    header: str = ""  # "@@ -a,b +c,d @@" of the hunk after a gap
    a_from: int = 0  # first line numbers of the run (gaps)
    b_from: int = 0
    first_change: int | None = None  # lazy chunks: the change blocks inside
    last_change: int | None = None
    eager: bool = False  # the first lazy chunk loads as soon as the page has, not when scrolled to

    @property
    def size(self) -> int:
        return self.end - self.start


def _hunk_header(result: DiffResult, start: int, end: int) -> str:
    a0, b0 = result.position(start)
    a1, b1 = result.position(end)
    a_len, b_len = a1 - a0, b1 - b0
    return f"@@ -{a0 + 1 if a_len else a0},{a_len} +{b0 + 1 if b_len else b0},{b_len} @@"


def _gap(result: DiffResult, start: int, end: int, header: str = "") -> Piece:
    a_from, b_from = result.position(start)
    return Piece("gap", start, end, header=header, a_from=a_from + 1, b_from=b_from + 1)


def _changes_in(result: DiffResult, start: int, end: int) -> tuple[int | None, int | None]:
    numbers = [k + 1 for k, (c0, c1) in enumerate(result.changes) if c0 < end and c1 > start]
    return (numbers[0], numbers[-1]) if numbers else (None, None)


def page_pieces(result: DiffResult, renderer: RowRenderer, context: int) -> list[Piece]:
    pieces: list[Piece] = []
    budget = INLINE_ROWS
    eager = True
    previous_end = 0
    for hunk in result.hunks(context):
        if hunk.row_start > previous_end:
            pieces.append(
                _gap(result, previous_end, hunk.row_start, _hunk_header(result, hunk.row_start, hunk.row_end))
            )
        chunk_start = hunk.row_start
        while chunk_start < hunk.row_end:
            # the inline rows end where the budget does: the rest of that chunk loads lazily
            chunk_end = min(chunk_start + (min(CHUNK_ROWS, budget) if budget > 0 else CHUNK_ROWS), hunk.row_end)
            if budget > 0:
                pieces.append(Piece("rows", chunk_start, chunk_end, renderer.rows(chunk_start, chunk_end)))
                budget -= chunk_end - chunk_start
            else:
                first, last = _changes_in(result, chunk_start, chunk_end)
                pieces.append(Piece("lazy", chunk_start, chunk_end, first_change=first, last_change=last, eager=eager))
                eager = False
            chunk_start = chunk_end
        previous_end = hunk.row_end
    if pieces and previous_end < result.rows:
        pieces.append(_gap(result, previous_end, result.rows))
    return pieces


# --------------------------------------------------------------------------- responses


def _etag(a: Side, b: Side, options: PageOptions, variant: str) -> str:
    titles = (a.run.title or "", b.run.title or "")  # shown on the page, and editable
    key = "|".join((a.snapshot.blob, b.snapshot.blob, a.id, b.id, *titles, repr(options), variant, _BUILD))
    return '"d' + hashlib.sha256(key.encode()).hexdigest()[:32] + '"'


def _runs(a: Side, b: Side) -> tuple[str, str]:
    """The runs a diff shows: its cached copy lives while both do (see app/page_cache.py)."""
    return a.compilation.run_id, b.compilation.run_id


def _cache_headers(tag: str) -> dict[str, str]:
    return {"ETag": tag, "Cache-Control": "private, max-age=0, must-revalidate", "Vary": "HX-Request"}


def _json_url(request: Request, urls: Urls) -> str:
    route = urls.route(request.url.path)
    url = urls.json(urls.path(route))
    return url + (f"?{request.url.query}" if request.url.query else "")


def _not_found(request: Request, urls: Urls, message: str, wants_json: bool) -> Response:
    if wants_json:
        return error_json(message, 404)
    return templates.TemplateResponse(
        request,
        "diff.html",
        {
            "data": {"error": message},
            "page": None,
            "urls": urls,
            "json_url": _json_url(request, urls),
            "settings": request.app.state.settings,
        },
        status_code=404,
    )


def _render_block(block: str, context: dict[str, Any]) -> str:
    template = templates.env.get_template("diff.html")
    return "".join(template.blocks[block](template.new_context(context)))


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

    json_url = _json_url(request, urls)
    page = _page_model(result, a, b, options, urls, data)
    context = {
        "request": request,
        "data": data,
        "page": page,
        "urls": urls,
        "json_url": json_url,
        "settings": request.app.state.settings,
    }
    headers["Link"] = f'<{json_url}>; rel="alternate"; type="application/json"'
    if htmx:
        response = HTMLResponse(_render_block("main", context), headers=headers)
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
        value = request.query_params.get(name, "")
        return int(value) if value.isdigit() else default

    start = min(number("start", 0), result.rows)
    end = max(min(number("end", start + CHUNK_ROWS), result.rows, start + 4 * CHUNK_ROWS), start)
    gap_start, gap_end = number("gap_start", start), number("gap_end", end)
    renderer = _renderer(result, a, b, options, urls)
    pieces = []
    if gap_start < start:
        pieces.append(_gap(result, gap_start, start, ""))
    pieces.append(Piece("rows", start, end, renderer.rows(start, end)))
    if end < gap_end <= result.rows:
        following = next((h for h in result.hunks(options.diff.context) if h.row_start == gap_end), None)
        header = _hunk_header(result, following.row_start, following.row_end) if following else ""
        pieces.append(_gap(result, end, gap_end, header))
    headers = _cache_headers(tag)
    if request.headers.get("hx-request") != "true":
        # followed as a plain link (no JavaScript): those rows inside the whole page
        data = page_data(session, a, b, result, options, urls)
        page = _page_model(result, a, b, options, urls, data, pieces)
        page["partial"] = {"first": start + 1, "last": end, "rows": result.rows}
        json_url = urls.diff(a.id, b.id) + ".json" + options.query()
        context = {
            "request": request,
            "data": data,
            "page": page,
            "urls": urls,
            "json_url": json_url,
            "settings": request.app.state.settings,
        }
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
    response = HTMLResponse(_render_block("pieces", context), headers=headers)
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

    toggles = [
        {
            "name": "loc",
            "label": "Locations",
            "on": not diff_options.loc,
            "title": "Ignore loc(...) and #loc alias lines when comparing"
            if not diff_options.loc
            else "Locations are compared; click to ignore them",
            "url": link(loc=not diff_options.loc),
        },
        {
            "name": "ssa",
            "label": "SSA numbering",
            "on": diff_options.ssa,
            "title": "Ignore renumbered values (%12 → %13, %acc_4 → %acc_9) when they rename consistently",
            "url": link(ssa=not diff_options.ssa),
        },
        {
            "name": "alias",
            "label": "Alias numbering",
            "on": diff_options.alias,
            "title": "Ignore renumbered aliases (#blocked1 → #blocked2, #shared3) when they rename consistently",
            "url": link(alias=not diff_options.alias),
        },
    ]
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
        "layout_aliases": _layout_aliases(result),
    }


def _layout_aliases(result: DiffResult) -> Markup | None:
    """Each side's drawable layout aliases (expanded), for layout-link.js: a click on an alias in a
    tensor type opens the layout inspector at that shape."""
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


__all__ = ["diff_cache", "hunks_json", "page_data", "parse_options", "router"]
