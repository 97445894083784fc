"""Render an IR text for the browser: highlighted lines, locations, layouts and hardware ops.

Sits above the store (it reads blobs) and below insight (which counts ops from its analyses):
may import `parsers/`, the pure rooms and `app.store`, never insight, ingest, web or cli.

Everything here is a function of a blob's text and its kind, and blobs never change, so each
result is computed once per ``(blob hash, kind)`` and kept in a size-bounded LRU. A page view
then only wraps the cached lines in its template.

:func:`render_ir` returns a :class:`Rendered`: one HTML ``<div class="ln" id="L{n}">`` per line
(line-number link, ``file:line`` gutter, hardware-op markers, the highlighted code), plus what
the page and its JSON twin need next to it: the primary source location of every line, the
layout aliases explained, and the hardware-op counts. The line markup is built here, like a
Pygments formatter builds its own, because it is the hot loop (a 21,000-line LLVM-dialect
snapshot is 7 MB of text); page structure stays in the templates.

Markup contract, which ``static/snapshot.css`` and ``static/snapshot.js`` rely on (class names
chosen not to collide with Pygments' short token classes such as ``l``, ``n``, ``m``, ``k``):

* ``.ln`` a line; ``.locdef`` a line holding only location definitions (``#loc3 = loc(...)``,
  PTX ``.loc``/``.file``); ``.hlN`` (N = 1..12) the colour of its Python line; ``.o-KEY`` one per
  hardware-op group (see :data:`app.highlight.hwops.GROUPS`); ``data-py="F:L"`` the primary
  frame as (index into :attr:`Rendered.loc_files`, line).
* ``.nr`` the line-number link, ``.gtr`` the ``file:line`` gutter, ``.mk`` the op markers
  (``<i class="hw-KEY">``), ``.code`` the code.
* ``.lc`` a location token (``loc(...)`` and the blank before it), hidden unless locations are
  shown; ``a.ly[data-ly=ALIAS]`` a use of a layout alias, linking to its definition, coloured
  ``.yN``; ``.enc[data-enc=KEY]`` the head of an inline encoding (``#ttg.slice<...>``)
  explained by :attr:`Rendered.encodings` under that key.
* Pygments' short class names (``nf``, ``nv``, ``kt``...) for tokens.

All text is HTML-escaped here; nothing from the IR reaches the page unescaped.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygments.lexer import Lexer
from pygments.token import STANDARD_TYPES, Comment, Name, Text, Whitespace, _TokenType

from app.highlight import lexer_for
from app.highlight.hwops import (
    GROUPS,
    classify_lines,
    classify_ptx_line,
    count_groups,
    count_ptx,
    text_target,
)
from app.highlight.layouts import Layout, explain_encoding, find_layouts, read_encoding
from app.store.blobs import BlobReader
from parsers import sass
from parsers.loc import KINDS as LOC_KINDS
from parsers.loc import LineLocs, SourceLoc, resolve

__all__ = [
    "FIRST_LINES",
    "LARGE_SNAPSHOT_LINES",
    "PAGE_LINES",
    "PALETTE_SIZE",
    "RENDER_VERSION",
    "Analysis",
    "Rendered",
    "RenderedSource",
    "analyse_ir",
    "artifact_kind",
    "blob_reader",
    "cache_headers",
    "etag",
    "highlight_line",
    "layout_dict",
    "line_colour",
    "ops_counts",
    "page_lines",
    "render_ir",
    "render_python",
    "sass_counts",
    "snapshot_kind",
    "source_index",
]

# Bump when the markup changes: it is part of every ETag.
RENDER_VERSION = "6"
PALETTE_SIZE = 12  # --hl-1 .. --hl-12 in static/app.css
LARGE_SNAPSHOT_LINES = 5000  # above this, lines are grouped in chunks painted lazily
CHUNK_LINES = 250
PAGE_LINES = 200  # lines per part a long text loads as it scrolls (and per cached page of markup)
FIRST_LINES = 100  # a text longer than PAGE_LINES opens with this many: two screens, half the first part's work
# Lexers that return to their root state at every newline, so a page of lines lexes on its own
# (tests/test_highlight.py checks MLIR's; page-by-page renders of every corpus text of these kinds
# equal whole-text ones). The AMDGCN lexer is not: its texts are lexed whole, then cut into pages.
_LINE_LOCAL_KINDS = frozenset({"mlir", "llvm", "ptx", "sass", "json", "text"})

# Texts for pages are read through this reader; it keeps only a couple of texts, since the
# rendered results are what is cached (a snapshot can be megabytes).
blob_reader = BlobReader(capacity=4)

_MLIR_KINDS = frozenset({"mlir", "ttir", "ttgir", "glir", "source"})
_LAYOUT_DIALECTS = ("#ttg.", "#triton_gpu.", "#ttng.", "#triton_nvidia_gpu.", "#gluon.", "#amdg.", "#amdgpu.")


# --------------------------------------------------------------------------- kinds and lexers


def snapshot_kind(kind: str) -> str:
    """The render kind of a snapshot: its ``kind`` column is "mlir", "internal" or "llvm"."""
    return "llvm" if kind == "llvm" else "mlir"


def artifact_kind(kind: str) -> str:
    """The render kind of a cache file, from its ``kind`` column ("ttgir", "ptx", "json"...)."""
    if kind in _MLIR_KINDS:
        return "mlir"
    if kind in ("llir", "ptx", "amdgcn", "sass", "json", "python"):
        return kind
    if kind == "grp":
        return "json"
    return "text"


def _loc_kind(kind: str) -> str | None:
    kind = "llvm" if kind == "llir" else kind
    return kind if kind in LOC_KINDS else None


# --------------------------------------------------------------------------- escaping


def _escape(text: str) -> str:
    """Escape text for an element's content (quotes are harmless there)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _attr(text: str) -> str:
    """Escape text for a double-quoted attribute value."""
    return _escape(text).replace('"', "&quot;")


_CSS_CLASS: dict[_TokenType, str] = {}


def _css_class(token_type: _TokenType) -> str:
    css = _CSS_CLASS.get(token_type)
    if css is None:
        current = token_type
        while current not in STANDARD_TYPES:
            current = current.parent
        css = STANDARD_TYPES[current]
        _CSS_CLASS[token_type] = css
    return css


def _token_lines(text: str, lexer: Lexer) -> list[list[tuple[_TokenType, str]]]:
    """The lexer's tokens, cut at newlines: one token list per line of ``text.split("\\n")``."""
    lines: list[list[tuple[_TokenType, str]]] = [[]]
    current = lines[0]
    for _, token_type, value in lexer.get_tokens_unprocessed(text):
        if "\n" not in value:
            current.append((token_type, value))
            continue
        parts = value.split("\n")
        if parts[0]:
            current.append((token_type, parts[0]))
        for part in parts[1:]:
            current = []
            lines.append(current)
            if part:
                current.append((token_type, part))
    return lines


# Token classes no stylesheet colours (plain names, white space): written as bare text. Each span
# is an element the browser styles and lays out; a Python pane's names were a third of its spans.
_UNSTYLED = frozenset({"", "n", "w"})


def _plain_tokens_html(tokens: list[tuple[_TokenType, str]]) -> str:
    """Tokens as HTML, one span per run of tokens of the same styled class."""
    parts = []
    run_css, run = "", ""
    for token_type, value in tokens:
        css = _css_class(token_type)
        if css in _UNSTYLED:
            css = ""
        if css != run_css:
            if run:
                parts.append(_run_html(run_css, run))
            run_css, run = css, ""
        run += value
    if run:
        parts.append(_run_html(run_css, run))
    return "".join(parts)


def _run_html(css: str, text: str) -> str:
    return f'<span class="{css}">{_escape(text)}</span>' if css else _escape(text)


def highlight_line(line: str, kind: str) -> str:
    """One line highlighted on its own, as HTML (for snippets such as the map page's)."""
    tokens = _token_lines(line, lexer_for(kind))[0]
    return _plain_tokens_html(tokens)


def warm_up() -> None:
    """Build the lexers and run each once, so that a process's first page does not pay for it."""
    for kind in ("mlir", "llvm", "ptx", "amdgcn", "sass", "python"):
        highlight_line("%0 = tt.load %arg0 : tensor<128xf32, #blocked> loc(#loc1)", kind)


# --------------------------------------------------------------------------- colours


def line_colour(file: str, line: int) -> int:
    """A stable palette index (1..12) for a Python line: the same line has the same colour in
    every pass and every page; neighbouring lines of a file differ. Consecutive lines step 5
    palette entries (coprime with 12), so neighbours get hues far apart, not adjacent shades."""
    base = file.replace("\\", "/").rsplit("/", 1)[-1]
    return (zlib.crc32(base.encode()) + 5 * line) % PALETTE_SIZE + 1


def basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


# --------------------------------------------------------------------------- results


@dataclass
class SourceIndex:
    """Which IR lines map to which Python lines: the cheap part of a render, for the map page."""

    files: dict[str, int]  # primary file -> lines mapped to it
    by_source: dict[tuple[str, int], list[int]]  # (file, line) -> 1-based IR lines
    size: int = 0


@dataclass
class RenderedSource:
    """A Python source file, highlighted per line."""

    lines: list[str]  # highlighted code per line (no wrapper)
    size: int = 0


def layout_dict(layout: Layout) -> dict[str, Any]:
    return {
        "alias": layout.alias,
        "kind": layout.kind,
        "dialect": layout.dialect,
        "definition": layout.definition,
        "line": layout.line,
        "summary": layout.summary,
        "fields": [
            {"name": item.name, "value": item.value, "explanation": item.explanation}
            for item in layout.fields
        ],
    }


# --------------------------------------------------------------------------- the cache


class SizedLRU:
    """An LRU bounded by the total size of its values (and by a count), safe across threads."""

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.items: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> Any | None:
        with self.lock:
            entry = self.items.get(key)
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            self.items.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, value: Any, size: int) -> None:
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self.items[key] = (value, size)
            self.bytes += size
            while len(self.items) > 1 and (self.bytes > self.max_bytes or len(self.items) > self.max_items):
                _, (_, old_size) = self.items.popitem(last=False)
                self.bytes -= old_size

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.bytes = 0


_SOURCES = SizedLRU(max_bytes=32 << 20, max_items=256)
_OPS = SizedLRU(max_bytes=16 << 20, max_items=100_000)
_INDEXES = SizedLRU(max_bytes=64 << 20, max_items=4096)
_ANALYSES = SizedLRU(max_bytes=256 << 20, max_items=1024)
_PAGES = SizedLRU(max_bytes=384 << 20, max_items=8192)


def clear_caches() -> None:
    """Forget every cached result (tests use this to time a cold render)."""
    for cache in (_SOURCES, _OPS, _INDEXES, _ANALYSES, _PAGES):
        cache.clear()


TextLoader = Callable[[], str | None]


def render_ir(
    digest: str, kind: str, load_text: TextLoader, debug_info: tuple[str, TextLoader] | None = None
) -> Rendered:
    """The rendered text of blob ``digest`` as ``kind`` ("mlir", "llvm", "ptx"...), every line.

    ``debug_info`` is (hash, loader) of another LLVM IR text whose ``!DILocation`` metadata
    this one's ``!dbg !N`` references use: LLVM's function-scope pass dumps print a function
    without the module's metadata, which the compilation's latest module dump before it has.
    Pages use :func:`analyse_ir` and :func:`page_lines` instead, which mark up only what is shown;
    both caches (the analysis and the marked-up pages) serve this too.
    """
    analysis = analyse_ir(digest, kind, load_text, debug_info)
    fields_of = {name: getattr(analysis, name) for name in analysis.__dataclass_fields__}
    return Rendered(**fields_of, lines=page_lines(analysis, 0, analysis.line_count))


def analyse_ir(
    digest: str, kind: str, load_text: TextLoader, debug_info: tuple[str, TextLoader] | None = None
) -> Analysis:
    """Everything but the line markup of blob ``digest`` as ``kind``, cached (see :class:`Analysis`)."""
    key = (digest, kind, debug_info[0] if debug_info else None)
    cached = _ANALYSES.get(key)
    if cached is not None:
        return cached
    text = load_text() or ""
    if kind == "json":
        text = _pretty_json(text)
    context = (debug_info[1]() or "") if debug_info else None
    analysis = _analyse(key, text, kind, context)
    _ANALYSES.put(key, analysis, analysis.size)
    return analysis


def _page(analysis: Analysis, page: int) -> list[str]:
    """Page ``page`` (0-based, :attr:`Analysis.page_lines` lines) marked up, cached per blob."""
    key = (*analysis.key, page)
    cached = _PAGES.get(key)
    if cached is not None:
        return cached
    start = page * analysis.page_lines
    lines = _mark_up(analysis, start, min(start + analysis.page_lines, analysis.line_count))
    _PAGES.put(key, lines, sum(len(line) for line in lines) + 120 * len(lines))
    return lines


def page_lines(analysis: Analysis, start: int, count: int) -> list[str]:
    """The HTML of lines ``start`` .. ``start + count`` (0-based), from the cached pages."""
    end = min(analysis.line_count, start + max(0, count))
    start = max(0, start)
    if start >= end:
        return []
    size = analysis.page_lines
    lines: list[str] = []
    for page in range(start // size, (end - 1) // size + 1):
        page_html = _page(analysis, page)
        first = page * size
        lines.extend(page_html[max(0, start - first) : end - first])
    return lines


def group_chunks(lines: list[str], large: bool) -> str:
    """Lines joined, in ``.chunk`` blocks of CHUNK_LINES when the text is large (painted lazily)."""
    if not large:
        return "".join(lines)
    return "".join(
        f'<div class="chunk" style="contain-intrinsic-size: auto {len(lines[i : i + CHUNK_LINES]) * 19}px">'
        + "".join(lines[i : i + CHUNK_LINES])
        + "</div>"
        for i in range(0, len(lines), CHUNK_LINES)
    )


def needs_debug_info(text: str) -> bool:
    """An LLVM IR text that references ``!dbg`` metadata it does not define."""
    return "!dbg !" in text and "!DILocation(" not in text


def has_debug_info(text: str) -> bool:
    return "!DILocation(" in text


def render_python(digest: str, load_text: TextLoader) -> RenderedSource:
    """A Python source file highlighted per line, cached by blob hash."""
    key = (digest, "python")
    cached = _SOURCES.get(key)
    if cached is not None:
        return cached
    text = load_text() or ""
    lines = [_plain_tokens_html(tokens) for tokens in _token_lines(text, lexer_for("python"))]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    source = RenderedSource(lines=lines, size=sum(len(line) for line in lines) + 64 * len(lines))
    _SOURCES.put(key, source, source.size)
    return source


def ops_counts(digest: str, load_text: TextLoader) -> dict[str, int]:
    """count_groups of a blob's text, cached by hash (for the compilation's pass timeline)."""
    key = (digest, "ops")
    cached = _OPS.get(key)
    if cached is not None:
        return cached
    analysis = _ANALYSES.get((digest, "mlir", None)) or _ANALYSES.get((digest, "llvm", None))
    counts = dict(analysis.ops) if analysis is not None else count_groups(load_text() or "")
    _OPS.put(key, counts, 64 * len(counts) + 64)
    return counts


def sass_counts(digest: str, load_text: TextLoader) -> dict[str, int]:
    """Instructions per hardware-op group of a SASS text, cached by hash (for the compilation page)."""
    key = (digest, "sass-ops")
    cached = _OPS.get(key)
    if cached is not None:
        return cached
    analysis = _ANALYSES.get((digest, "sass", None))
    counts = dict(analysis.ops) if analysis is not None else sass.count_groups(load_text() or "")
    _OPS.put(key, counts, 64 * len(counts) + 64)
    return counts


def source_index(digest: str, kind: str, load_text: TextLoader) -> SourceIndex:
    """The (file, line) -> IR lines index of a blob, from its render when cached, else from
    its locations alone (no highlighting), cached by hash."""
    analysis = _ANALYSES.get((digest, kind, None))
    if analysis is not None:
        return _index_of(analysis.by_source)
    key = (digest, kind, "index")
    cached = _INDEXES.get(key)
    if cached is not None:
        return cached
    loc_kind = _loc_kind(kind)
    by_source: dict[tuple[str, int], list[int]] = {}
    if loc_kind is not None:
        for index, line_locs in enumerate(resolve(load_text() or "", loc_kind)):
            if line_locs.primary is not None:
                by_source.setdefault((line_locs.primary.file, line_locs.primary.line), []).append(index + 1)
    index = _index_of(by_source)
    _INDEXES.put(key, index, index.size)
    return index


def _index_of(by_source: dict[tuple[str, int], list[int]]) -> SourceIndex:
    files: Counter[str] = Counter()
    for (file, _), lines in by_source.items():
        files[file] += len(lines)
    size = 64 * len(by_source) + 8 * sum(files.values())
    return SourceIndex(files=dict(files.most_common()), by_source=by_source, size=size)


def cache_stats() -> dict[str, dict[str, int]]:
    return {
        name: {"items": len(cache.items), "bytes": cache.bytes, "hits": cache.hits, "misses": cache.misses}
        for name, cache in (
            ("sources", _SOURCES),
            ("ops", _OPS),
            ("indexes", _INDEXES),
            ("analyses", _ANALYSES),
            ("pages", _PAGES),
        )
    }


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    except ValueError:
        return text


# --------------------------------------------------------------------------- ETags

_TEMPLATE_FILES = (
    "snapshot.html",
    "compilation.html",
    "_snap_layouts.html",
    "_snap_source.html",
    "_snap_help.html",
)


def _build_digest() -> str:
    """A digest of this module and the snapshot templates: a deploy that changes them changes every ETag."""
    digest = hashlib.sha256(RENDER_VERSION.encode())
    root = Path(__file__).resolve().parents[2]
    for path in [Path(__file__), *(root / "templates" / name for name in _TEMPLATE_FILES)]:
        try:
            digest.update(path.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()[:10]


_BUILD = _build_digest()


def etag(digest: str, variant: str = "") -> str:
    """The ETag of a page rendered from blob ``digest``: blob hash + render version (+ variant)."""
    tag = f"{digest}.{RENDER_VERSION}.{_BUILD}"
    if variant:
        tag += "." + hashlib.sha256(variant.encode()).hexdigest()[:10]
    return f'"{tag}"'


def cache_headers(tag: str) -> dict[str, str]:
    return {"ETag": tag, "Cache-Control": "private, max-age=0, must-revalidate"}


def not_modified(if_none_match: str | None, tag: str) -> bool:
    if not if_none_match:
        return False
    candidates = [candidate.strip() for candidate in if_none_match.split(",")]
    return "*" in candidates or tag in candidates or f"W/{tag}" in candidates


# --------------------------------------------------------------------------- the renderer


@dataclass
class _Decorations:
    """Per-text lookups the line loop consults."""

    layouts: dict[str, Layout] = field(default_factory=dict)
    layout_colours: dict[str, int] = field(default_factory=dict)
    layout_lines: dict[int, str] = field(default_factory=dict)  # 1-based definition line -> alias
    encodings: dict[str, Layout] = field(default_factory=dict)
    encoding_keys: dict[str, str] = field(default_factory=dict)  # encoding text -> key


@dataclass
class Analysis:
    """What a page needs of a whole text, without its line markup: locations, layouts, inline
    encodings, hardware ops. Cheap next to highlighting (no lexing), computed once per blob;
    the lines themselves are marked up page by page (:func:`page_lines`)."""

    key: tuple
    kind: str
    raw_lines: list[str]
    locs: list[SourceLoc | None]  # primary frame per line
    # Every frame of each located line: `gutter` makes a line's label and title only when it is
    # shown (building them for every line was a third of a large text's analysis).
    line_locs: list[LineLocs | None]
    loc_files: list[str]
    file_index: dict[str, int]
    by_source: dict[tuple[str, int], list[int]]
    decorations: _Decorations
    line_groups: list[tuple[str, ...]]  # hardware-op groups per line
    ops: dict[str, int]
    op_lines: dict[str, int]
    loc_lines: int
    loc_tokens: int  # location tokens, counted from the text (the loc toggle shows when > 0)
    size: int = 0

    @property
    def line_count(self) -> int:
        return len(self.raw_lines)

    def gutter(self, index: int) -> tuple[str, str] | None:
        """(label, escaped title) of 0-based line ``index``, None if it has no location."""
        locs = self.line_locs[index]
        if locs is None or locs.primary is None:
            return None
        title = " ← ".join(
            f"{frame.file}:{frame.line}" + (f":{frame.col}" if frame.col else "") for frame in locs.frames
        )
        if locs.name:
            title = f"{locs.name} @ {title}"
        return f"{basename(locs.primary.file)}:{locs.primary.line}", _attr(title)

    @property
    def large(self) -> bool:
        return len(self.raw_lines) > LARGE_SNAPSHOT_LINES

    @property
    def layouts(self) -> dict[str, Layout]:
        return self.decorations.layouts

    @property
    def layout_colours(self) -> dict[str, int]:
        return self.decorations.layout_colours

    @property
    def encodings(self) -> dict[str, Layout]:
        return self.decorations.encodings

    @property
    def page_lines(self) -> int:
        """Lines per page: the unit lexed and cached together (the whole text when its lexer is
        not line-local)."""
        return PAGE_LINES if self.kind in _LINE_LOCAL_KINDS else max(1, len(self.raw_lines))

    @property
    def page_count(self) -> int:
        return -(-len(self.raw_lines) // self.page_lines) if self.raw_lines else 0

    def py_keys(self) -> list[str | None]:
        """data-py of every line ("F:L", or None), for the page's script."""
        index = self.file_index
        return [None if loc is None else f"{index[loc.file]}:{loc.line}" for loc in self.locs]

    def group_lines(self) -> dict[str, list[int]]:
        """1-based lines per hardware-op group."""
        lines: dict[str, list[int]] = {}
        for number, groups in enumerate(self.line_groups, start=1):
            for key in groups:
                lines.setdefault(key, []).append(number)
        return lines

    def locs_json(self) -> list[dict[str, Any] | None]:
        return [
            None if loc is None else {"file": loc.file, "line": loc.line, "col": loc.col} for loc in self.locs
        ]

    def layouts_json(self) -> dict[str, dict[str, Any]]:
        return {alias: layout_dict(layout) for alias, layout in self.layouts.items()}


@dataclass
class Rendered(Analysis):
    """An IR text with every line marked up (:func:`render_ir`); see the module docstring for the
    markup. Pages use the :class:`Analysis` and :func:`page_lines` instead."""

    lines: list[str] = field(default_factory=list)  # one <div class="ln"> per line, line n at n-1

    def chunk_sizes(self) -> list[int]:
        """Lines per ``.chunk`` block of :func:`group_chunks`."""
        if not self.large:
            return [self.line_count]
        return [min(CHUNK_LINES, self.line_count - start) for start in range(0, self.line_count, CHUNK_LINES)]


_ENCODING_HEAD = re.compile(r"#(?:ttg|triton_gpu|ttng|triton_nvidia_gpu|gluon|amdg|amdgpu)\.")


def _analyse(key: tuple, text: str, kind: str, debug_context: str | None = None) -> Analysis:
    raw_lines = text.split("\n")
    if len(raw_lines) > 1 and raw_lines[-1] == "":  # the newline ending the last line
        raw_lines.pop()

    loc_kind = _loc_kind(kind)
    line_locs: list[LineLocs] = []
    if loc_kind and debug_context:
        # resolve as the second dump of a log whose first one defines the metadata
        combined = f"; *** IR Dump (metadata) ***\n{debug_context}\n; *** IR Dump (this) ***\n{text}"
        line_locs = resolve(combined, loc_kind)[-len(text.split("\n")) :]
    elif loc_kind:
        line_locs = resolve(text, loc_kind)
    primaries: list[SourceLoc | None] = [
        line_locs[index].primary if index < len(line_locs) else None for index in range(len(raw_lines))
    ]
    files = Counter(loc.file for loc in primaries if loc is not None)
    loc_files = [file for file, _ in files.most_common()]
    file_index = {file: index for index, file in enumerate(loc_files)}

    decorations = _Decorations()
    if kind == "mlir":
        decorations.layouts = find_layouts(text)
        for number, (alias, layout) in enumerate(decorations.layouts.items()):
            decorations.layout_colours[alias] = number % PALETTE_SIZE + 1
            if layout.line is not None:
                decorations.layout_lines[layout.line] = alias
        # inline encodings, in text order: keys e1, e2... must not depend on which page is lexed first
        line_start, index = 0, 0
        for match in _ENCODING_HEAD.finditer(text):
            position = match.start()
            if position and (text[position - 1].isalnum() or text[position - 1] in "_.$#-"):
                continue  # the middle of a longer name
            index += text.count("\n", line_start, position)
            line_start = text.rfind("\n", 0, position) + 1
            if index < len(raw_lines) and (index + 1) not in decorations.layout_lines:
                _encoding_key(raw_lines[index], position - line_start, decorations, create=True)

    op_lines = dict.fromkeys((group.key for group in GROUPS), 0)
    empty: tuple[str, ...] = ()
    if kind == "ptx":
        line_groups = [tuple(classify_ptx_line(raw)) if raw else empty for raw in raw_lines]
    elif kind == "sass":
        line_groups = [tuple(sass.classify_line(raw)) if raw else empty for raw in raw_lines]
    else:  # descriptor ops' group (TMA, TDM) follows the module's target
        line_groups = classify_lines(text, len(raw_lines), text_target(text) if kind == "mlir" else None)
    for groups in filter(None, line_groups):
        for group in groups:
            op_lines[group] += 1
    by_source: dict[tuple[str, int], list[int]] = {}
    located: list[LineLocs | None] = [None] * len(raw_lines)
    loc_lines = 0
    for index, primary in enumerate(primaries):
        if primary is not None:
            by_source.setdefault((primary.file, primary.line), []).append(index + 1)
            located[index] = line_locs[index]
            loc_lines += 1

    if kind == "mlir":
        loc_tokens = text.count("loc(") + text.count("loc  (")
    elif kind == "ptx":
        loc_tokens = text.count(".loc") + text.count(".file")
    elif kind == "sass":
        loc_tokens = text.count("//## File")
    else:
        loc_tokens = 0
    if kind in ("mlir", "llvm"):
        ops = count_groups(text)
    elif kind == "ptx":
        ops = count_ptx(text)
    else:
        ops = dict.fromkeys(op_lines, 0)
    if kind == "sass":  # instructions per group, under the IR's group keys
        ops.update(sass.count_groups(text))
    size = len(text) + 200 * len(raw_lines)
    return Analysis(
        key=key,
        kind=kind,
        raw_lines=raw_lines,
        locs=primaries,
        line_locs=located,
        loc_files=loc_files,
        file_index=file_index,
        by_source=by_source,
        decorations=decorations,
        line_groups=line_groups,
        ops=ops,
        op_lines=op_lines,
        loc_lines=loc_lines,
        loc_tokens=loc_tokens,
        size=size,
    )


def _gutter_before(analysis: Analysis, start: int) -> str:
    """The gutter label in force before 0-based line ``start`` (whether line ``start`` repeats
    it): the last located line before it, looking past blank and location-only lines."""
    lexer = lexer_for(analysis.kind)
    for index in range(start - 1, max(-1, start - 400), -1):
        gutter = analysis.gutter(index)
        if gutter is not None:
            return gutter[0]
        raw = analysis.raw_lines[index]
        if not raw.strip():
            continue
        _, loc_only = _line_code(_token_lines(raw, lexer)[0], raw, analysis.decorations, index + 1)
        if not loc_only:
            return ""
    return ""


def _mark_up(analysis: Analysis, start: int, end: int) -> list[str]:
    """Lines ``start``..``end`` (0-based, end excluded) as HTML."""
    raw_lines = analysis.raw_lines
    if analysis.page_lines >= len(raw_lines):
        token_lines = _token_lines("\n".join(raw_lines), lexer_for(analysis.kind))[start:end]
    else:  # line-local lexer: a page lexes on its own
        token_lines = _token_lines("\n".join(raw_lines[start:end]), lexer_for(analysis.kind))
    decorations = analysis.decorations
    file_index = analysis.file_index
    previous_gutter = _gutter_before(analysis, start) if start else ""
    html_lines: list[str] = []
    for offset, raw in enumerate(raw_lines[start:end]):
        index = start + offset
        number = index + 1
        tokens = token_lines[offset] if offset < len(token_lines) else []
        code, loc_only = _line_code(tokens, raw, decorations, number)
        classes = "ln"
        if loc_only:
            classes += " locdef"
        groups = analysis.line_groups[index]
        for key in groups:
            classes += f" o-{key}"
        primary = analysis.locs[index]
        attrs = ""
        if primary is not None:
            classes += f" hl{line_colour(primary.file, primary.line)}"
            attrs = f' data-py="{file_index[primary.file]}:{primary.line}"'
            label, title = analysis.gutter(index)  # type: ignore[misc]
            same = " same" if label == previous_gutter else ""
            gutter = f'<span class="gtr{same}" title="{title}">{_escape(label)}</span>'
            previous_gutter = label
        else:
            gutter = '<span class="gtr"></span>'
            if not loc_only and raw.strip():
                previous_gutter = ""
        markers = "".join(f'<i class="hw-{key}"></i>' for key in groups)
        html_lines.append(
            f'<div class="{classes}" id="L{number}"{attrs}>'
            f'<a class="nr" href="#L{number}">{number}</a>{gutter}'
            f'<span class="mk">{markers}</span><span class="code">{code}</span></div>'
        )
    return html_lines


_LOC_TOKEN = Comment.Special
_SPACE_TYPES = (Whitespace, Text.Whitespace)


def _line_code(
    tokens: list[tuple[_TokenType, str]], raw: str, decorations: _Decorations, number: int
) -> tuple[str, bool]:
    """One line's code as HTML, and whether it holds nothing but location tokens."""
    parts: list[str] = []
    append = parts.append
    column = 0
    has_loc = False
    has_other = False
    pending_space = ""  # a blank before a loc(...) is hidden with it
    layouts = decorations.layouts
    css_classes = _CSS_CLASS
    for token_type, value in tokens:
        start = column
        column += len(value)
        if (
            token_type is Whitespace
            or token_type is Text.Whitespace
            or (token_type is Text and value.isspace())
        ):
            if pending_space:
                append(pending_space)
            pending_space = value
            continue
        if token_type is _LOC_TOKEN:
            has_loc = True
            append(f'<span class="lc">{pending_space}<span class="cs">{_escape(value)}</span></span>')
            pending_space = ""
            continue
        if pending_space:
            append(pending_space)
            pending_space = ""
        if token_type not in Comment:  # a comment beside a .loc (PTX's "// k.py:13:19") is part of it
            has_other = True
        if token_type is Name.Decorator and layouts and value[:1] == "#" and value[1:] in layouts:
            alias = value[1:]
            layout = layouts[alias]
            colour = decorations.layout_colours[alias]
            target = f' href="#L{layout.line}"' if layout.line else ""
            definition = " def" if start == 0 and decorations.layout_lines.get(number) == alias else ""
            append(
                f'<a class="ly y{colour}{definition}" data-ly="{_attr(alias)}"{target}>{_escape(value)}</a>'
            )
            continue
        if (
            token_type is Name.Builtin
            and value.startswith(_LAYOUT_DIALECTS)
            and number not in decorations.layout_lines
        ):
            key = _encoding_key(raw, start, decorations)
            if key is not None:
                append(f'<span class="nb enc" data-enc="{key}">{_escape(value)}</span>')
                continue
        css = css_classes.get(token_type)
        if css is None:
            css = _css_class(token_type)
        append(f'<span class="{css}">{_escape(value)}</span>' if css else _escape(value))
    if pending_space:
        append(pending_space)
    return "".join(parts), has_loc and not has_other


def _encoding_key(raw: str, start: int, decorations: _Decorations, create: bool = False) -> str | None:
    """The key of the inline encoding starting at ``raw[start]``, explained once per text (by
    :func:`_analyse`, which finds them all first; the line loop only looks keys up)."""
    encoding = read_encoding(raw, start)
    if not encoding:
        return None
    key = decorations.encoding_keys.get(encoding)
    if key is None and create:
        layout = explain_encoding(encoding, aliases=decorations.layouts)  # never raises on odd input
        key = f"e{len(decorations.encodings) + 1}"
        decorations.encoding_keys[encoding] = key
        decorations.encodings[key] = layout
    return key
