"""Op history pages: /runs/{run}/c/{ordinal}/history?s=&line= (or &value=, or ?file=&py=) and .json."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from app import render
from app.insight.op_history import Target, blob_op_lines, history, target_from_line, target_from_value
from app.insight.page_data import snapshot_dict
from app.insight.pass_attribution import attribute_rows
from app.urls import Urls
from app.web.responder import SessionDep, UrlsDep, respond
from app.web.views.ir_page import load_compilation

router = APIRouter()
FOLLOWED_KINDS = ("mlir", "internal")


@router.get("/runs/{run_id}/c/{ordinal}/history")
@router.get("/runs/{run_id}/c/{ordinal}/history.json")
def op_history_page(
    request: Request, run_id: str, ordinal: str, session: SessionDep, urls: UrlsDep,
    s: int | None = None, line: int | None = None, value: str | None = None,
    file: str | None = None, py: int | None = None,
):
    compilation = load_compilation(session, run_id, ordinal.removesuffix(".json"))
    snapshots = list(compilation.snapshots)
    rows = [snapshot_dict(compilation.run_id, compilation.ordinal, snapshot, urls) for snapshot in snapshots]
    attribute_rows(rows)
    by_index = {snapshot.index: snapshot for snapshot in snapshots}

    def ops_of(row: dict):
        snapshot = by_index[row["index"]]
        if snapshot.kind not in FOLLOWED_KINDS:
            return None
        return blob_op_lines(snapshot.blob, snapshot.kind,
                             lambda digest=snapshot.blob: render.blob_reader.text(session, digest))

    target: Target | None = None
    problem = None
    if file is not None and py is not None:
        target = Target((file, py, None), None, exact_col=False)
    elif s is not None and (line is not None or value):
        if s not in by_index:
            raise HTTPException(404, "no such snapshot")
        ops = ops_of(rows[[row["index"] for row in rows].index(s)])
        if ops is None:
            problem = "LLVM IR snapshots carry no MLIR locations: pick the op in an MLIR snapshot."
        else:
            target = target_from_line(ops, line) if line is not None else target_from_value(ops, value or "")
            if target is None:
                problem = (f"Line {line} of snapshot #{s} holds no op." if line is not None
                           else f"No op of snapshot #{s} defines {value}.")
            elif target.loc is None:
                problem = "This op has no location (loc), so it cannot be followed from pass to pass."
    else:
        problem = "Pick an op: select a line in a snapshot and press h, or give ?s=INDEX&line=N."
    timeline = history(target, rows, ops_of) if target is not None and target.loc is not None else []
    data = {
        "run": compilation.run_id,
        "compilation": compilation.ordinal,
        "kernel": compilation.kernel,
        "compilation_url": urls.compilation(compilation.run_id, compilation.ordinal),
        "picked": _picked(target, s, urls, compilation),
        "problem": problem,
        "events": sum(1 for entry in timeline if entry["event"]),
        "timeline": timeline,
    }
    return respond(request, "op_history.html", data, status=200)


def _picked(target: Target | None, index: int | None, urls: Urls, compilation) -> dict | None:
    if target is None:
        return None
    loc = target.loc
    picked = target.picked
    return {
        "snapshot": index,
        "line": picked.line if picked else None,
        "op": picked.op if picked else None,
        "results": picked.results if picked else None,
        "type": picked.type if picked else None,
        "layouts": list(picked.layouts) if picked else [],
        "name": target.name,
        "loc": (f"{loc[0]}:{loc[1]}" + (f":{loc[2]}" if loc[2] else "")) if loc else None,
        "python_url": urls.op_history(compilation.run_id, compilation.ordinal, file=loc[0], py_line=loc[1])
        if loc else None,
    }
