"""Charts of a kernel's history, drawn on the server as inline SVG with no script: one chart per
metric and series, one dot per point (a link to its compilation), each flagged step marked in red
(worse) or green (better) and linked to the compare page of its two compilations; and the /kernels
list's sparklines."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

WIDTH, HEIGHT, PAD = 420, 130, 8
SPARK_WIDTH, SPARK_HEIGHT = 120, 24
METRICS = (  # (key in a point, label, the flag metric that marks it)
    ("registers", "registers per thread", "registers"),
    ("spill_bytes", "spill bytes per thread", "spills"),
    ("shared_bytes", "shared memory bytes per block", None),
    ("occupancy", "occupancy", "occupancy"),
    ("time_ns", "time per launch (ns)", "time"),
    ("autotune_ms", "autotune time (ms)", None),
    ("passes_changed", "passes that changed the IR", None),
)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.3g}"


def _scale(values: list[float | None], width: int, height: int, pad: int):
    known = [v for v in values if v is not None]
    low, high = (min(known), max(known)) if known else (0, 1)
    span = (high - low) or 1
    step = (width - 2 * pad) / max(len(values) - 1, 1)

    def at(index: int, value: float) -> tuple[float, float]:
        return pad + index * step, height - pad - (value - low) * (height - 2 * pad) / span

    return at, low, high


def sparkline_svg(values: list[float | None]) -> Markup:
    if not any(v is not None for v in values):
        return Markup('<span class="none">—</span>')
    at, low, high = _scale(values, SPARK_WIDTH, SPARK_HEIGHT, 2)
    points = " ".join("{:.1f},{:.1f}".format(*at(i, v)) for i, v in enumerate(values) if v is not None)
    title = escape(f"{_number(low)} … {_number(high)} over the last {len(values)} points")
    return Markup(f'<svg class="spark" width="{SPARK_WIDTH}" height="{SPARK_HEIGHT}" role="img" aria-label="{title}">'
                  f'<title>{title}</title><polyline fill="none" stroke="currentColor" stroke-width="1.5" '
                  f'points="{points}"/></svg>')


def _point_label(point: dict[str, Any]) -> str:
    return point["labels"].get("triton") or point["run"][:6]


def chart_svg(points: list[dict[str, Any]], key: str, label: str, flags: list[dict[str, Any]]) -> Markup:
    """A line over the points, the low and high values on the left, each point's Triton label (or
    run) below when they fit, and the flagged steps as big linked dots."""
    values = [point.get(key) for point in points]
    left, bottom = 56, 18
    scale, low, high = _scale(values, WIDTH - left - 20, HEIGHT - bottom, PAD)

    def at(index: int, value: float) -> tuple[float, float]:
        x, y = scale(index, value)
        return x + left, y

    parts = [(f'<svg class="history-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
              f'aria-label="{escape(label)}"><title>{escape(label)}: {escape(_number(low))} … '
              f'{escape(_number(high))}</title>'),
             f'<text class="axis" x="{left - 6}" y="{PAD + 4}" text-anchor="end">{escape(_number(high))}</text>',
             f'<text class="axis" x="{left - 6}" y="{HEIGHT - bottom - PAD}" text-anchor="end">{escape(_number(low))}</text>',
             f'<line class="axis" x1="{left}" y1="{HEIGHT - bottom}" x2="{WIDTH}" y2="{HEIGHT - bottom}"/>']
    if len(points) <= 16:
        for index, point in enumerate(points):
            x, _ = at(index, low)
            parts.append(f'<text class="axis" x="{x:.1f}" y="{HEIGHT - 4}" text-anchor="middle">'
                         f'{escape(_point_label(point)[:12])}</text>')
    line = " ".join("{:.1f},{:.1f}".format(*at(i, v)) for i, v in enumerate(values) if v is not None)
    if line:
        parts.append(f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{line}"/>')
    for index, (point, value) in enumerate(zip(points, values, strict=True)):
        if value is None:
            continue
        x, y = at(index, value)
        title = escape(f"{point['run'][:8]} {_point_label(point)} {point['created_at'][:16]}: {_number(value)}")
        parts.append(f'<a href="{escape(point["compilation"])}"><circle cx="{x:.1f}" cy="{y:.1f}" r="3">'
                     f'<title>{title}</title></circle></a>')
    for flag in flags:
        value = values[flag["to_index"]]
        if value is None:
            continue
        x, y = at(flag["to_index"], value)
        title = escape(f"{flag['direction']}: {flag['metric']} {flag['before']} → {flag['after']} (compare)")
        parts.append(f'<a class="flag-mark {flag["direction"]}" href="{escape(flag["compare"])}" '
                     f'data-metric="{escape(flag["metric"])}"><circle cx="{x:.1f}" cy="{y:.1f}" r="7" '
                     f'class="flag {flag["direction"]}"><title>{title}</title></circle></a>')
    parts.append("</svg>")
    return Markup("".join(parts))


def history_charts(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per series, the charts of the metrics any of its points has."""
    out = []
    for number, series in enumerate(data["series"]):
        charts = []
        for key, label, metric in METRICS:
            if not any(point.get(key) for point in series["points"]):
                continue  # never measured, or zero throughout (no spills, no pass dumps)
            marked = [flag for flag in series["flags"] if metric is not None and flag["metric"] == metric]
            charts.append({"key": key, "label": label, "svg": chart_svg(series["points"], key, label, marked),
                           "last": series["points"][-1].get(key), "flags": len(marked)})
        out.append({"series": number, "charts": charts})
    return out
