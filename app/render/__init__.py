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

The modules: :mod:`~app.render.cache` (the LRUs), :mod:`~app.render.kinds` (what a blob's kind
means here), :mod:`~app.render.analysis` (a text's locations, layouts and ops, no markup),
:mod:`~app.render.markup` (tokens to line HTML), :mod:`~app.render.etags` (HTTP caching), and
the small :mod:`~app.render.escape` and :mod:`~app.render.labels`. Callers import from the package.

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

from app.render.analysis import (
    FIRST_LINES,
    LARGE_SNAPSHOT_LINES,
    PAGE_LINES,
    Analysis,
    SourceIndex,
    TextLoader,
    analyse_ir,
    layout_dict,
    ops_counts,
    sass_counts,
    source_index,
)
from app.render.cache import SizedLRU, blob_reader, cache_stats, clear_caches
from app.render.etags import RENDER_VERSION, cache_headers, etag, not_modified
from app.render.kinds import (
    artifact_kind,
    has_debug_info,
    has_locations,
    lacks_locations,
    needs_debug_info,
    snapshot_kind,
)
from app.render.labels import PALETTE_SIZE, basename, line_colour
from app.render.markup import (
    CHUNK_LINES,
    Rendered,
    RenderedSource,
    group_chunks,
    highlight_line,
    page_lines,
    render_ir,
    render_python,
    warm_up,
)

__all__ = [
    "CHUNK_LINES",
    "FIRST_LINES",
    "LARGE_SNAPSHOT_LINES",
    "PAGE_LINES",
    "PALETTE_SIZE",
    "RENDER_VERSION",
    "Analysis",
    "Rendered",
    "RenderedSource",
    "SizedLRU",
    "SourceIndex",
    "TextLoader",
    "analyse_ir",
    "artifact_kind",
    "basename",
    "blob_reader",
    "cache_headers",
    "cache_stats",
    "clear_caches",
    "etag",
    "group_chunks",
    "has_debug_info",
    "has_locations",
    "highlight_line",
    "lacks_locations",
    "layout_dict",
    "line_colour",
    "needs_debug_info",
    "not_modified",
    "ops_counts",
    "page_lines",
    "render_ir",
    "render_python",
    "sass_counts",
    "snapshot_kind",
    "source_index",
    "warm_up",
]
