"""What a page needs of a whole IR text, without its line markup: locations, layout aliases and
inline encodings explained, hardware ops; plus the cheaper indexes and counts pages read from it."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.highlight.cute_layouts import CUTE_EXPLAINED
from app.highlight.hwops import (
    GROUPS,
    classify_lines,
    classify_ptx_line,
    count_groups,
    count_ptx,
    text_target,
)
from app.highlight.layouts import Layout, explain_encoding, find_layouts, read_encoding
from app.render.cache import _ANALYSES, _INDEXES, _OPS
from app.render.escape import escape_attr
from app.render.kinds import LINE_LOCAL_KINDS, loc_kind_of
from app.render.labels import PALETTE_SIZE, basename
from app.render.loc_transfer import transfer
from parsers.caches import sass
from parsers.locations.loc import LineLocs, SourceLoc, resolve

LARGE_SNAPSHOT_LINES = 5000  # above this, lines are grouped in chunks painted lazily

PAGE_LINES = 200  # lines per part a long text loads as it scrolls (and per cached page of markup)
# A text longer than PAGE_LINES opens with this many: two screens, half the first part's work.
FIRST_LINES = 100


@dataclass
class SourceIndex:
    """Which IR lines map to which Python lines: the cheap part of a render, for the map page."""

    files: dict[str, int]  # primary file -> lines mapped to it
    by_source: dict[tuple[str, int], list[int]]  # (file, line) -> 1-based IR lines
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


TextLoader = Callable[[], str | None]


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
    loc_kind = loc_kind_of(kind)
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


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    except ValueError:
        return text


@dataclass
class Decorations:
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
    decorations: Decorations
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
        return f"{basename(locs.primary.file)}:{locs.primary.line}", escape_attr(title)

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
        return PAGE_LINES if self.kind in LINE_LOCAL_KINDS else max(1, len(self.raw_lines))

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


_ENCODING_HEAD = re.compile(
    r"#(?:ttg|triton_gpu|ttng|triton_nvidia_gpu|gluon|amdg|amdgpu)\.|!cute\.(?:" + CUTE_EXPLAINED + r")<"
)


def _analyse(key: tuple, text: str, kind: str, debug_context: str | None = None) -> Analysis:
    raw_lines = text.split("\n")
    if len(raw_lines) > 1 and raw_lines[-1] == "":  # the newline ending the last line
        raw_lines.pop()

    loc_kind = loc_kind_of(kind)
    line_locs: list[LineLocs] = []
    if loc_kind == "mlir" and debug_context:
        # a text printed without locations: its ops take those of an earlier text's (loc_transfer)
        line_locs = transfer(debug_context, text)
    elif loc_kind and debug_context:
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

    decorations = Decorations()
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
                encoding_key(raw_lines[index], position - line_start, decorations, create=True)

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


def encoding_key(raw: str, start: int, decorations: Decorations, create: bool = False) -> str | None:
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
