"""Profile metrics for the pages: the compilation page's hot lines, and per line of an IR page (a
pass snapshot or a cached file) the chosen metric, with what the heat gutter script needs.
The numbers come from app/insight/profile_metrics.py; this module only shapes them."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.insight.hot_line_links import pass_links
from app.insight.profile_metrics import CompilationMetrics, compilation_metrics
from app.store.models import Compilation
from app.urls import Urls

__all__ = ["compare_hot_lines", "hot_lines_fields", "line_metric_fields", "python_line_metrics"]


def hot_lines_fields(session: Session, compilation: Compilation, urls: Urls, wanted: str | None,
                     snapshot: int | None = None) -> dict[str, Any]:
    """`hot_lines` of the compilation JSON (null without a profile), and the metrics to choose from.
    Each line's `url` opens its IR lines (`ir_lines`) in pass `snapshot` (an index; by default the
    last TTGIR pass with located lines: `pass`), else, with none there, the line in every pass."""
    metrics = compilation_metrics(session, compilation)
    metric = metrics.choose(wanted)
    if metric is None:
        return {"hot_lines": None}
    hot = metrics.hot_lines(metric, urls)
    hot["available"] = metrics.metrics()
    hot["unknown_metric"] = metrics.unknown(wanted)
    hot["candidates"] = _candidates(session, compilation, metrics, metric, urls) if hot.get("shared") else []
    links = pass_links(session, compilation, urls, snapshot, {row["file"] for row in hot["lines"]})
    hot["pass"] = links.describe()
    hot["passes"] = [{"index": s.index, "pass": s.pass_name, "stage": s.stage} for s in compilation.snapshots]
    for row in hot["lines"]:
        url, row["ir_lines"] = links.link(row["file"], row["line"])
        row["url"] = url or row["map_url"]
    return {"hot_lines": hot}


def _candidates(session: Session, compilation: Compilation, metrics: CompilationMetrics, metric: str,
                urls: Urls) -> list[dict[str, Any]]:
    """The compilations a shared kernel may be (same name, no hash told them apart), this one marked,
    with what tells their configs apart."""
    kernel = metrics.kernel_for(metric)
    pks = list(kernel.row.candidates or []) if kernel else []
    rows = session.scalars(select(Compilation).where(Compilation.pk.in_(pks)).order_by(Compilation.ordinal)).all()
    return [{"url": urls.compilation(row.run_id, row.ordinal), "ordinal": row.ordinal, "this": row.pk == compilation.pk,
             "num_warps": row.num_warps, "num_stages": row.num_stages, "shared": row.shared} for row in rows]


def python_line_metrics(session: Session, compilation: Compilation, wanted: str | None) -> dict[str, Any] | None:
    """The map page's `metrics`: the chosen metric per Python line (every file the profile names),
    with what makes the sum whole: `lines` + `unattributed` + `other_compilations` = `total`, the
    profile kernel's total."""
    metrics = compilation_metrics(session, compilation)
    metric = metrics.choose(wanted)
    if metric is None:
        return None
    kernel = metrics.kernel_for(metric)
    info = next(item for item in metrics.metrics() if item["name"] == metric)
    python = metrics.python_totals(metric)
    return {
        "metric": info, "available": metrics.metrics(), "unknown_metric": metrics.unknown(wanted),
        "kernel": kernel.row.name if kernel else None,
        "shared": kernel.shared if kernel else False,
        "total": kernel.row.totals.get(metric, 0) if kernel else 0,
        "unattributed": kernel.unattributed.get(metric, 0) if kernel else 0,
        "other_compilations": kernel.other.get(metric, 0) if kernel else 0,
        "lines": [{"file": file, "line": line, "value": value} for (file, line), value in sorted(python.items())],
    }


def line_metric_fields(session: Session, compilation: Compilation, rendered: render.Analysis,
                       load_text: render.TextLoader, data: dict[str, Any], wanted: str | None) -> dict[str, Any]:
    """`metrics` of a snapshot's or file's JSON: the chosen metric per IR line (direct where the
    profile names this text's lines or instructions, else its Python line's total), per Python
    line, and the metrics to choose from. The page gets them as `heat_json` for its gutter."""
    metrics = compilation_metrics(session, compilation)
    metric = metrics.choose(wanted)
    if metric is None:
        return {"metrics": None}
    digest = rendered.key[0] if rendered.key else None
    lines = rendered.raw_lines if rendered.kind == "sass" else None
    values, same = metrics.line_values(metric, rendered.locs, rendered.kind, digest, lines)
    python = metrics.python_totals(metric)
    kernel = metrics.kernel_for(metric)
    info = next(item for item in metrics.metrics() if item["name"] == metric)
    direct = rendered.kind == "sass" and bool(values) and not same and kernel is not None and bool(kernel.sass) \
        or kind_is_direct(metrics, digest)
    total = kernel.own_total(metric) if kernel else 0
    fields = {
        "metric": info,
        "available": metrics.metrics(),
        "unknown_metric": metrics.unknown(wanted),
        "kernel": kernel.row.name if kernel else None,
        "shared": kernel.shared if kernel else False,
        # shares are of this compilation's own total (less other compilations' lines), in one scope
        "total": total,
        "kernel_total": kernel.row.totals.get(metric, 0) if kernel else 0,
        "scope": kernel.scope if kernel else None,
        "other_scopes": metrics.other_scopes(metric),
        "profile": kernel.profile.path if kernel else None,
        # "op": each value is the IR line's own; "source line": a source line's total, put once on its
        # first IR line here, its other IR lines in `same_as`
        "attribution": "op" if direct else "source line",
        "lines": [{"line": number, "value": value} for number, value in sorted(values.items())],
        "same_as": [{"line": number, "first": first} for number, first in sorted(same.items())],
        "python": [{"file": file, "line": line, "value": value} for (file, line), value in sorted(python.items())],
    }
    detail: dict[str, str] = {}
    if rendered.kind == "sass" and lines is not None:
        # per instruction (the profile's own rows, matched by offset): every metric it holds
        matched, missing = metrics.sass_instructions(metric, lines)
        fields["instructions"] = [
            {"line": number, "offset": offset, "value": amounts.get(metric, 0), "metrics": amounts}
            for number, offset, amounts in matched
        ]
        fields["unattributed"] = missing["value"]  # the profile's instructions not in this text
        fields["unmatched_instructions"] = missing["count"]
        for number, _, amounts in matched:
            shown = sorted(((v, k) for k, v in amounts.items() if v and k != metric), reverse=True)[:SASS_DETAIL]
            if amounts.get(metric) or shown:
                detail[str(number)] = "; ".join(f"{k}: {_number(v)}" for v, k in shown)
    file_index = rendered.file_index
    heat = {
        "metric": metric, "unit": info["unit"], "max": max(values.values(), default=0),
        "lines": {str(number): value for number, value in values.items()},
        "same": {str(number): first for number, first in same.items()},
        "scope": fields["scope"],
        # per source pane (its index among the IR's loc files) and line, for the Python pane
        "python": {f"{file_index[file]}:{line}": value for (file, line), value in python.items() if file in file_index},
        "total": fields["total"],
        "detail": detail,  # SASS: an instruction's other metrics, for its tooltip
        "direct": bool(detail) or direct,
    }
    return {"metrics": fields, "heat_json": json.dumps(heat).replace("</", "<\\/")}


SASS_DETAIL = 8  # other metrics named in a SASS instruction's tooltip


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def kind_is_direct(metrics: CompilationMetrics, digest: str | None) -> bool:
    """Whether the values are the IR lines' own (the profile named this text's lines), not their
    Python lines' totals repeated on each."""
    return digest is not None and any(kernel.ir for kernel in metrics.kernels) and digest == metrics.ttgir_blob()


def compare_hot_lines(session: Session, a: Compilation, b: Compilation, urls: Urls, wanted: str | None,
                      limit: int = 20) -> dict[str, Any] | None:
    """The compare page's `hot_lines`: A's and B's per-Python-line totals of one metric side by side,
    the union of both sides' top lines, with B - A (negative: B spends less there)."""
    left, right = compilation_metrics(session, a), compilation_metrics(session, b)
    names = [item["name"] for item in left.metrics() if item["name"] in {m["name"] for m in right.metrics()}]
    if not names:
        return None
    metric = wanted if wanted in names else names[0]
    unknown = wanted if wanted and wanted != metric else None
    totals = left.python_totals(metric), right.python_totals(metric)
    top = sorted(set(totals[0]) | set(totals[1]), key=lambda key: -max(totals[0].get(key, 0), totals[1].get(key, 0)))
    top = top[:limit]
    files = {file for file, _ in top}
    a_links, b_links = (pass_links(session, side, urls, None, files) for side in (a, b))
    rows = []
    for file, line in top:
        va, vb = totals[0].get((file, line), 0), totals[1].get((file, line), 0)
        a_url, a_lines = a_links.link(file, line)
        b_url, b_lines = b_links.link(file, line)
        rows.append({"file": file, "line": line, "name": render.basename(file), "a": va, "b": vb, "diff": vb - va,
                     # each side's IR of the line in its pass (the last TTGIR one), else in every pass
                     "a_url": a_url or urls.source_map(a.run_id, a.ordinal, file, line),
                     "b_url": b_url or urls.source_map(b.run_id, b.ordinal, file, line),
                     "a_ir_lines": a_lines, "b_ir_lines": b_lines,
                     "a_map_url": urls.source_map(a.run_id, a.ordinal, file, line),
                     "b_map_url": urls.source_map(b.run_id, b.ordinal, file, line)})
    sums = [sum(side.values()) for side in totals]
    return {"metric": next(m for m in left.metrics() if m["name"] == metric), "available": names,
            "unknown_metric": unknown,
            "a_pass": a_links.describe(), "b_pass": b_links.describe(),
            "lines": rows, "a_total": sums[0], "b_total": sums[1], "diff": sums[1] - sums[0]}
