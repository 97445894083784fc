"""Rendering diff rows as highlighted, marked table rows, and cutting a diff into page pieces
(rows shown, unchanged runs folded, chunks loaded later), plus the options that drive them.

Shared by the diff page (app/web/views/diffs.py) and the comparison page's per-row previews
(app/web/views/compare.py), which render the same rows with the same template partial
(templates/_diff_pieces.html).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from markupsafe import Markup

from app import render
from app.diff import (
    DEFAULT_CONTEXT,
    DELETE,
    EQUAL,
    INSERT,
    MAX_CONTEXT,
    REPLACE,
    DiffOptions,
    DiffResult,
    Row,
    inline_changes,
    loc_spans,
)
from app.urls import parse_int

VIEWS = ("split", "unified")
# Rows rendered with the page, about three screens; the next chunk loads right after the page, the
# rest as they scroll into view. A row costs ~0.2-0.3 ms cold (highlighting and inline changes of
# long lines), so the 250 shipped before took 40-80 ms.
INLINE_ROWS = 120
CHUNK_ROWS = 250  # rows per lazily loaded chunk


# --------------------------------------------------------------------------- options


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


def ignore_toggles(options: DiffOptions, link: Callable[..., str], when: str = "comparing") -> list[dict[str, Any]]:
    """The Ignore switches of the diff and compare pages (one definition, so both show the same
    defaults): a switch is on when that part is ignored. Locations are ignored unless `loc=1` asks
    to compare them (DiffOptions.loc); SSA and alias numbering only with `ssa=1` / `alias=1`.
    `link(**changes)` is the page's URL with one option flipped; `when` ends the switches' titles."""
    return [
        {"name": "loc", "label": "Locations", "on": not options.loc, "url": link(loc=not options.loc),
         "title": f"Ignore loc(...) and #loc alias lines when {when}" if not options.loc
         else "Locations are compared; click to ignore them"},
        {"name": "ssa", "label": "SSA numbering", "on": options.ssa, "url": link(ssa=not options.ssa),
         "title": "Ignore renumbered values (%12 → %13, %acc_4 → %acc_9) when they rename consistently"},
        {"name": "alias", "label": "Alias numbering", "on": options.alias, "url": link(alias=not options.alias),
         "title": "Ignore renumbered aliases (#blocked1 → #blocked2, #shared3) when they rename consistently"},
    ]


def ignores_anything(options: DiffOptions) -> bool:
    """Whether any part of the text is ignored (locations are, by default)."""
    return not options.loc or options.ssa or options.alias


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def parse_options(request: Request) -> PageOptions:
    params = request.query_params
    context_text = (params.get("context") or "").strip().lower()
    if context_text == "all":
        context = -1
    elif parse_int(context_text) is not None:
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


def hunk_header(result: DiffResult, start: int, end: int) -> str:
    a0, b0 = result.position(start)
    a1, b1 = result.position(end)
    a_len, b_len = a1 - a0, b1 - b0
    return f"@@ -{a0 + 1 if a_len else a0},{a_len} +{b0 + 1 if b_len else b0},{b_len} @@"


def gap_piece(result: DiffResult, start: int, end: int, header: str = "") -> Piece:
    a_from, b_from = result.position(start)
    return Piece("gap", start, end, header=header, a_from=a_from + 1, b_from=b_from + 1)


def _changes_in(result: DiffResult, start: int, end: int) -> tuple[int | None, int | None]:
    numbers = [k + 1 for k, (c0, c1) in enumerate(result.changes) if c0 < end and c1 > start]
    return (numbers[0], numbers[-1]) if numbers else (None, None)


def page_pieces(
    result: DiffResult, renderer: RowRenderer, context: int, inline_rows: int | None = None
) -> list[Piece]:
    """Hunks cut into pieces: the first `inline_rows` rows rendered, later chunks left to load."""
    pieces: list[Piece] = []
    budget = INLINE_ROWS if inline_rows is None else inline_rows
    eager = True
    previous_end = 0
    for hunk in result.hunks(context):
        if hunk.row_start > previous_end:
            pieces.append(
                gap_piece(result, previous_end, hunk.row_start, hunk_header(result, hunk.row_start, hunk.row_end))
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
        pieces.append(gap_piece(result, previous_end, result.rows))
    return pieces
