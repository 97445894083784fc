"""A compilation's page: its pass timeline (op counts, charts, outliers), launches and comparisons."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.highlight.hwops import GROUPS
from app.insight.comparisons import compare_candidates
from app.insight.compilation_data import compilation_data
from app.insight.launches import launch_page_cells
from app.insight.pass_charts import chart_svgs
from app.insight.remarks import by_pass
from app.urls import parse_int
from app.web.auth import identify, visible_runs
from app.web.responder import SessionDep, UrlsDep, respond, wants_json
from app.web.views.ir_page import load_compilation
from app.web.views.replay import failure_reproducer
from app.web.views.sources import link_diagnostics

router = APIRouter()


@router.get("/runs/{run_id}/c/{ordinal}")
def compilation_page(request: Request, run_id: str, ordinal: str, session: SessionDep, urls: UrlsDep):
    compilation = load_compilation(session, run_id, ordinal)
    # ?s=<snapshot index>: the pass the hot lines link into (default: the last TTGIR one)
    data = compilation_data(session, compilation, urls, request.query_params.get("metric"),
                            parse_int(request.query_params.get("s", "")))
    visible = visible_runs(identify(request), request.app.state.settings)  # other runs: those the reader may list
    data["compare_with"] = compare_candidates(session, compilation, urls, visible)
    link_diagnostics(session, compilation.run_id, data["diagnostics"], urls)
    data["reproduce_failure"] = failure_reproducer(session, compilation, urls)
    link_diagnostics(session, compilation.run_id, data["remarks"], urls)
    if not wants_json(request):
        # the op columns worth showing: groups some snapshot of this compilation uses
        present = [group for group in GROUPS if any(row["ops"].get(group.key) for row in data["snapshots"])]
        data["page"] = {
            "groups": present,
            "launch_cells": launch_page_cells(data["launches"]),
            "charts": chart_svgs(data["charts"], data["snapshots"]),
            "outliers": {item["index"]: item for item in data["charts"]["outliers"]},
            "remarks_by_pass": by_pass(data["remarks"]),
            "remark_counts": {item["snapshot_index"]: len(item["remarks"]) for item in by_pass(data["remarks"])},
        }
    return respond(request, "compilation.html", data)
