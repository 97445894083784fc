"""What a compilation's page says about it, in one place: its own page and each side of a comparison
(whose JSON holds the compilations "as on their own pages") build it here."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app import render
from app.insight import blob_facts
from app.insight.autotune import autotune_result
from app.insight.kernel_config import compilation_config
from app.insight.line_metrics import hot_lines_fields
from app.insight.op_search import first_seen, indexed
from app.insight.page_data import compilation_detail
from app.insight.pass_charts import pass_charts
from app.insight.remarks import compilation_remarks
from app.insight.resources import compilation_resources
from app.store.models import Compilation
from app.urls import Urls


def compilation_data(session: Session, compilation: Compilation, urls: Urls,
                     metric: str | None = None, snapshot: int | None = None) -> dict[str, Any]:
    """The compilation's detail (snapshots, files, metadata, launches), its op index's first
    appearances, its per-pass charts, resources, config and (with a profile) its hot lines by
    ``metric`` (the profile's first metric when None), linked into pass ``snapshot`` (an index)."""
    snapshots = list(compilation.snapshots)
    blob_facts.warm(session, [snapshot.blob for snapshot in snapshots])
    data = compilation_detail(session, compilation, urls)
    data["first_seen"] = first_seen(session, compilation, urls)
    data["op_indexed"] = indexed(session, compilation)
    data["charts"] = pass_charts(
        snapshots, data["snapshots"],
        lambda digest: (lambda: render.blob_reader.text(session, digest)),
    )
    # the compiler's remarks, warnings and notes, each at the pass that emitted it
    data["remarks"] = compilation_remarks(session, compilation, urls)
    data["resources"] = compilation_resources(compilation, session)
    data["config"] = compilation_config(session, compilation)
    # whether the autotuner picked this config, and its benchmark times (the run's autotune tables)
    data["autotune"] = autotune_result(session, compilation, urls)
    data.update(hot_lines_fields(session, compilation, urls, metric, snapshot))
    return data
