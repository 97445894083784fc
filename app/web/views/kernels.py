"""Kernel history pages: /kernels (every kernel the reader may see), /kernels/NAME (one kernel's
series across runs, flagged), and /runs/ID/check (`irlens check`'s answer for a stored run), each
with its .json twin. The data: app/insight/kernel_history.py and app/insight/kernel_check.py."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse

from app.insight.kernel_charts import history_charts, sparkline_svg
from app.insight.kernel_check import CheckError, check_run, markdown, parse_fail_on
from app.insight.kernel_flags import Thresholds
from app.insight.kernel_history import MAX_POINTS, kernel_history, kernel_list
from app.insight.kernel_points import ensure_points
from app.settings import Settings
from app.store.models import Run
from app.urls import parse_int
from app.web.auth import IdentityDep, visible_runs
from app.web.responder import SessionDep, UrlsDep, respond, strip_json, wants_json

router = APIRouter()
MAX_QUERY = 500
# Runs whose points a request writes before reading (those the background round has not reached:
# usually none, or the upload of a moment ago).
PENDING_PER_REQUEST = 20


@router.get("/kernels")
@router.get("/kernels.json")
def kernels_page(request: Request, session: SessionDep, urls: UrlsDep, identity: IdentityDep, q: str = ""):
    settings: Settings = request.app.state.settings
    visible = visible_runs(identity, settings)
    # Whom `visible` lets see what: everyone alike without tokens, else listed runs plus one's own.
    reader = ("all",) if visible is None else ("listed", identity.name or "")
    ensure_points(session, limit=PENDING_PER_REQUEST)
    data = kernel_list(session, urls, visible, q[:MAX_QUERY], reader)
    if not wants_json(request):  # the list may be a worker's kept copy: drawn on copies of its rows
        data = {**data, "kernels": [{**kernel, "sparkline_svg": sparkline_svg(kernel["sparkline"]["values"])}
                                    for kernel in data["kernels"]]}
    return respond(request, "kernels.html", data)


@router.get("/kernels/{name:path}")
def kernel_page(request: Request, name: str, session: SessionDep, urls: UrlsDep, identity: IdentityDep,
                order: str = "", limit: str = ""):
    settings: Settings = request.app.state.settings
    name = strip_json(name)
    if not name or len(name) > 500:
        raise HTTPException(404, "no such kernel")
    shown = parse_int(limit) if limit else settings.history_points
    ensure_points(session, limit=PENDING_PER_REQUEST)
    data = kernel_history(session, name, urls, visible_runs(identity, settings), Thresholds.from_settings(settings),
                          order=order[:60] or None, limit=min(shown or settings.history_points, MAX_POINTS))
    if not data["series"]:
        raise HTTPException(404, f"no kernel {name[:200]} in the runs you may see")
    if not wants_json(request):
        data["charts"] = history_charts(data)
    return respond(request, "kernel.html", data)


@router.get("/runs/{run_id}/check")
@router.get("/runs/{run_id}/check.json")
def run_check(request: Request, run_id: str, session: SessionDep, urls: UrlsDep, identity: IdentityDep,
              baseline: str = "", fail_on: str = "", format: str = ""):
    """The run's kernels against a baseline; `format=markdown` gives the PR comment as text/markdown."""
    settings: Settings = request.app.state.settings
    run_id = strip_json(run_id)
    if session.get(Run, run_id) is None:
        raise HTTPException(404, "no such run")
    ensure_points(session, [run_id])  # a check right after its upload: before the background round
    ensure_points(session, limit=PENDING_PER_REQUEST)
    try:
        data = check_run(session, run_id, urls, visible_runs(identity, settings), Thresholds.from_settings(settings),
                         baseline=baseline[:300] or None, fail_on=parse_fail_on(fail_on[:200]))
    except CheckError as error:
        raise HTTPException(422, str(error)) from error
    data["markdown"] = markdown(data, f"{request.url.scheme}://{request.url.netloc}")
    if format == "markdown":
        return PlainTextResponse(data["markdown"], media_type="text/markdown; charset=utf-8")
    return respond(request, "check.html", data)
