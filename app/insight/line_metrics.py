"""Profile metrics for the pages: the compilation page's hot lines, and per line of an IR page (a
pass snapshot or a cached file) the chosen metric, with what the heat gutter script needs.
The numbers come from app/insight/profile_metrics.py; this module only shapes them."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from app import render
from app.insight.profile_metrics import compilation_metrics
from app.store.models import Compilation
from app.urls import Urls

__all__ = ["hot_lines_fields", "line_metric_fields"]


def hot_lines_fields(session: Session, compilation: Compilation, urls: Urls, wanted: str | None,
                     snapshot: int | None = None) -> dict[str, Any]:
    """`hot_lines` of the compilation JSON (null without a profile), and the metrics to choose from."""
    metrics = compilation_metrics(session, compilation)
    metric = metrics.choose(wanted)
    if metric is None:
        return {"hot_lines": None}
    hot = metrics.hot_lines(metric, urls, snapshot)
    hot["available"] = metrics.metrics()
    return {"hot_lines": hot}


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
    values = metrics.line_values(metric, rendered.locs, rendered.kind, digest, lines)
    python = metrics.python_totals(metric)
    kernel = metrics.kernel_for(metric)
    info = next(item for item in metrics.metrics() if item["name"] == metric)
    fields = {
        "metric": info,
        "available": metrics.metrics(),
        "kernel": kernel.row.name if kernel else None,
        "shared": kernel.shared if kernel else False,
        "total": kernel.row.totals.get(metric, 0) if kernel else 0,
        "lines": [{"line": number, "value": value} for number, value in sorted(values.items())],
        "python": [{"file": file, "line": line, "value": value} for (file, line), value in sorted(python.items())],
    }
    file_index = rendered.file_index
    heat = {
        "metric": metric, "unit": info["unit"], "max": max(values.values(), default=0),
        "lines": {str(number): value for number, value in values.items()},
        # per source pane (its index among the IR's loc files) and line, for the Python pane
        "python": {f"{file_index[file]}:{line}": value for (file, line), value in python.items() if file in file_index},
        "total": fields["total"],
    }
    return {"metrics": fields, "heat_json": json.dumps(heat).replace("</", "<\\/")}
