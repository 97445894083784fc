"""Line markup: lexer tokens to HTML, per line, with the decorations of the text's
:class:`~app.render.analysis.Analysis` (gutter, op markers, layout links, encodings); see the
package docstring for the contract. Built here, like a Pygments formatter builds its own,
because it is the hot loop."""

from __future__ import annotations

from dataclasses import dataclass, field

from pygments.lexer import Lexer
from pygments.token import STANDARD_TYPES, Comment, Keyword, Name, Text, Whitespace, _TokenType

from app.highlight import lexer_for
from app.highlight.cute_layouts import CUTE_EXPLAINED
from app.render.analysis import (
    Analysis,
    Decorations,
    TextLoader,
    analyse_ir,
    encoding_key,
)
from app.render.cache import _PAGES, _SOURCES
from app.render.escape import escape, escape_attr
from app.render.labels import line_colour

CHUNK_LINES = 250  # lines per lazily painted `.chunk` of a large text (see group_chunks)

_CUTE_TYPES = tuple(f"!cute.{kind}" for kind in CUTE_EXPLAINED.split("|"))  # explained where used inline
_LAYOUT_DIALECTS = ("#ttg.", "#triton_gpu.", "#ttng.", "#triton_nvidia_gpu.", "#gluon.", "#amdg.", "#amdgpu.")

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
    return f'<span class="{css}">{escape(text)}</span>' if css else escape(text)


def highlight_line(line: str, kind: str) -> str:
    """One line highlighted on its own, as HTML (for snippets such as the map page's)."""
    tokens = _token_lines(line, lexer_for(kind))[0]
    return _plain_tokens_html(tokens)


def warm_up() -> None:
    """Build the lexers and run each once, so that a process's first page does not pay for it."""
    for kind in ("mlir", "llvm", "ptx", "amdgcn", "sass", "python"):
        highlight_line("%0 = tt.load %arg0 : tensor<128xf32, #blocked> loc(#loc1)", kind)


@dataclass
class RenderedSource:
    """A Python source file, highlighted per line."""

    lines: list[str]  # highlighted code per line (no wrapper)
    size: int = 0


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
            gutter = f'<span class="gtr{same}" title="{title}">{escape(label)}</span>'
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
    tokens: list[tuple[_TokenType, str]], raw: str, decorations: Decorations, number: int
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
            append(f'<span class="lc">{pending_space}<span class="cs">{escape(value)}</span></span>')
            pending_space = ""
            continue
        if pending_space:
            append(pending_space)
            pending_space = ""
        if token_type not in Comment:  # a comment beside a .loc (PTX's "// k.py:13:19") is part of it
            has_other = True
        if token_type is Name.Decorator and layouts and value[:1] in "#!" and value[1:] in layouts:
            alias = value[1:]
            layout = layouts[alias]
            colour = decorations.layout_colours[alias]
            target = f' href="#L{layout.line}"' if layout.line else ""
            definition = " def" if start == 0 and decorations.layout_lines.get(number) == alias else ""
            append(
                f'<a class="ly y{colour}{definition}" data-ly="{escape_attr(alias)}"{target}>{escape(value)}</a>'
            )
            continue
        if (
            (token_type is Name.Builtin and value.startswith(_LAYOUT_DIALECTS)
             or token_type is Keyword.Type and value.startswith(_CUTE_TYPES))
            and number not in decorations.layout_lines
        ):
            key = encoding_key(raw, start, decorations)
            if key is not None:
                append(f'<span class="nb enc" data-enc="{key}">{escape(value)}</span>')
                continue
        css = css_classes.get(token_type)
        if css is None:
            css = _css_class(token_type)
        append(f'<span class="{css}">{escape(value)}</span>' if css else escape(value))
    if pending_space:
        append(pending_space)
    return "".join(parts), has_loc and not has_other
