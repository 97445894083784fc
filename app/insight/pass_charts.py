"""Per-pass charts for a compilation's timeline: one inline SVG sparkline per measure (IR lines, ops per
dialect, convert_layout, shared-memory allocations and bytes, barriers, pass time), drawn on the
server with no script, each pass a link to its snapshot; passes that blow the IR up or shrink it
are listed and marked.

A blob's measures come from one scan of its op names (the op index's regex) plus one for
`local_alloc` result types, cached by blob hash like render.ops_counts.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from markupsafe import Markup, escape

from app.highlight.hwops import op_group
from app.insight.op_terms import FIRST_OP, OP
from app.render import SizedLRU

TextLoader = Callable[[], str | None]
_MEASURES = SizedLRU(max_bytes=8 << 20, max_items=100_000)
DIALECTS_SHOWN = 6
# A pass whose output has this many times more (or fewer) lines than its input, and at least
# MIN_LINES_DELTA lines more or fewer, is an outlier: it blew the IR up or shrank it.
BLOWUP_RATIO = 1.5
MIN_LINES_DELTA = 16
WIDTH, HEIGHT, PAD = 360, 28, 3

# The result type of a local_alloc: the last memdesc on its line, e.g. `!ttg.memdesc<2x128x64xf16, ...>`.
_ALLOC = re.compile(rb"(?:ttg|triton_gpu)\.local_alloc\b[^\n]*!(?:ttg|triton_gpu|tt)\.memdesc<((?:\d+x)+)(\w+)")
_ELEMENT_BITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Measures:
    dialects: dict[str, int]  # ops per dialect (the name's prefix before its first dot)
    convert_layout: int
    allocs: int  # ttg.local_alloc ops
    alloc_bytes: int  # the bytes their result types hold
    barriers: int  # ops of the hwops "barrier" group


def element_bits(name: str) -> int:
    """Bits of a memdesc element type: f16 -> 16, f8E4M3FN -> 8, i1 -> 8 (stored as bytes), bf16 -> 16."""
    match = _ELEMENT_BITS.search(name)
    bits = int(match.group(1)) if match else 32
    return max(bits, 8) if name.startswith("i") else bits


def measure(text: bytes) -> Measures:
    names: Counter[bytes] = Counter(OP.findall(text))
    first = FIRST_OP.match(text)
    if first is not None:
        names[first.group(1)] += 1
    dialects: Counter[str] = Counter()
    convert = allocs = barriers = 0
    for raw, count in names.items():
        name = raw.decode("ascii", "replace")
        dialects[name.split(".", 1)[0]] += count
        if name.endswith(".convert_layout"):
            convert += count
        elif name.endswith(".local_alloc"):
            allocs += count
        if op_group(name) == "barrier":
            barriers += count
    alloc_bytes = 0
    for shape, element in _ALLOC.findall(text):
        elements = 1
        for dim in shape.rstrip(b"x").split(b"x"):
            elements *= int(dim)
        alloc_bytes += elements * element_bits(element.decode("ascii", "replace")) // 8
    return Measures(dict(dialects), convert, allocs, alloc_bytes, barriers)


def blob_measures(digest: str, load_text: TextLoader) -> Measures:
    key = (digest, "charts")
    cached = _MEASURES.get(key)
    if cached is None:
        cached = measure((load_text() or "").encode("utf-8"))
        _MEASURES.put(key, cached, 200 + 40 * len(cached.dialects))
    return cached


def outliers(rows: list[dict]) -> list[dict]:
    """Passes whose output's line count is BLOWUP_RATIO times their input's, or 1/BLOWUP_RATIO."""
    found = []
    for before, after in itertools.pairwise(rows):
        old, new = before["lines"], after["lines"]
        if abs(new - old) < MIN_LINES_DELTA:
            continue
        ratio = new / old if old else float("inf")
        if ratio >= BLOWUP_RATIO or ratio <= 1 / BLOWUP_RATIO:
            found.append({
                # the pass that ran between the two dumps (rows carry made_by: pass_attribution)
                "index": after["index"], "pass": after.get("made_by", before["pass"]), "from": old, "to": new,
                "ratio": round(ratio, 2) if old else None, "kind": "grew" if new > old else "shrank",
                "diff_url": after.get("diff_prev_url"), "url": after["url"],
            })
    return found


def sparkline(values: list[float | None], rows: list[dict], label: str, unit: str, marked: set[int]) -> Markup:
    """An inline SVG: a line through the values, a dot on marked passes, and per pass a link with a
    tooltip. Missing values (None) break the line."""
    count = len(values)
    present = [value for value in values if value is not None]
    top = max(present) if present else 0
    low = min(0, min(present)) if present else 0
    span = (top - low) or 1
    step = (WIDTH - 2 * PAD) / max(count - 1, 1)

    def x(i: int) -> float:
        return PAD + i * step if count > 1 else WIDTH / 2

    def y(value: float) -> float:
        return HEIGHT - PAD - (value - low) / span * (HEIGHT - 2 * PAD)

    segments, current = [], []
    for i, value in enumerate(values):
        if value is None:
            if current:
                segments.append(current)
            current = []
        else:
            current.append(f"{x(i):.1f},{y(value):.1f}")
    if current:
        segments.append(current)
    # Stretched to its column's width (preserveAspectRatio none); strokes keep their width, and
    # dots are zero-length round-capped lines, which stay round however the x axis is stretched.
    parts = [(f'<svg class="spark" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             f'preserveAspectRatio="none" role="img" aria-label="{escape(label)} per pass">')]
    for points in segments:
        if len(points) == 1:
            cx, cy = points[0].split(",")
            parts.append(f'<line class="spark-dot" x1="{cx}" y1="{cy}" x2="{cx}" y2="{cy}"/>')
        else:
            parts.append(f'<polyline class="spark-line" points="{" ".join(points)}"/>')
    for i in sorted(marked):
        if 0 <= i < count and values[i] is not None:
            parts.append(f'<line class="spark-outlier" x1="{x(i):.1f}" y1="{y(values[i]):.1f}" '
                         f'x2="{x(i):.1f}" y2="{y(values[i]):.1f}"/>')
    half = step / 2 if count > 1 else WIDTH / 2
    for i, (value, row) in enumerate(zip(values, rows, strict=True)):
        shown = "—" if value is None else (f"{value:.2f}" if isinstance(value, float) else f"{value:,}")
        tip = f"#{row['index']} {row['pass']}: {shown}{unit}"
        parts.append(
            f'<a href="{escape(row["url"])}"><rect class="spark-hit" x="{max(x(i) - half, 0):.1f}" y="0" '
            f'width="{2 * half:.1f}" height="{HEIGHT}"><title>{escape(tip)}</title></rect></a>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def pass_charts(snapshots: list, rows: list[dict], load: Callable[[str], TextLoader]) -> dict:
    """The series for a compilation's snapshots (models, in index order) and their page rows
    (page_data.snapshot_dict plus "ms"). `load(digest)` gives a blob's text loader."""
    by_blob: dict[str, Measures] = {}
    for snapshot in snapshots:
        if snapshot.blob not in by_blob:
            by_blob[snapshot.blob] = blob_measures(snapshot.blob, load(snapshot.blob))
    measures = [by_blob[snapshot.blob] for snapshot in snapshots]
    totals: Counter[str] = Counter()
    for item in measures:
        for dialect, count in item.dialects.items():
            totals[dialect] = max(totals[dialect], count)
    series = [{"key": "lines", "label": "IR lines", "unit": " lines", "values": [row["lines"] for row in rows]}]
    for dialect, _ in totals.most_common(DIALECTS_SHOWN):
        series.append({"key": f"dialect:{dialect}", "label": f"{dialect} ops", "unit": " ops",
                       "values": [item.dialects.get(dialect, 0) for item in measures]})
    series += [
        {"key": "convert_layout", "label": "convert_layout", "unit": " ops",
         "values": [item.convert_layout for item in measures]},
        {"key": "allocs", "label": "shared allocs", "unit": " local_alloc",
         "values": [item.allocs for item in measures]},
        {"key": "alloc_bytes", "label": "shared bytes", "unit": " B", "values": [item.alloc_bytes for item in measures]},
        {"key": "barriers", "label": "barriers", "unit": " ops", "values": [item.barriers for item in measures]},
    ]
    if any((row.get("bank_conflicts") or {}).get("accesses") for row in rows):
        series.append({"key": "bank_conflicts", "label": "bank-conflicted accesses", "unit": " accesses",
                       "values": [(row.get("bank_conflicts") or {}).get("with_conflicts", 0) for row in rows]})
    if any(row.get("ms") is not None for row in rows):
        series.append({"key": "ms", "label": "pass time", "unit": " ms", "values": [row.get("ms") for row in rows]})
    marked = outliers(rows)
    return {"series": series, "outliers": marked}


def chart_svgs(charts: dict, rows: list[dict]) -> list[dict]:
    """The page's rows: each series with its sparkline, its largest value and its last."""
    marked = {item["index"] for item in charts["outliers"]}
    shown = []
    for item in charts["series"]:
        values = item["values"]
        present = [value for value in values if value is not None]
        shown.append({
            **item,
            "svg": sparkline(values, rows, item["label"], item["unit"], marked if item["key"] == "lines" else set()),
            "max": max(present) if present else None,
            "last": present[-1] if present else None,
            "flat": len(set(present)) <= 1,
        })
    return shown
