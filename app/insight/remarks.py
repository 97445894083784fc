"""The compiler's "why not" at the op: each remark, warning and note of a compilation (MLIR
diagnostics, as `MLIR_ENABLE_DIAGNOSTICS=remarks` prints them, parsed by parsers/logs/diagnostics.py) placed
at the pass that emitted it and the snapshot where its op shows.

Which pass: the log holds the diagnostic between two dumps. `MLIR_ENABLE_DUMP` prints each pass's
input ("IR Dump Before X") before X runs, so a diagnostic after that dump came from X; a pipeliner's
internal dumps sit inside the pass that printed them (the last module dump before them names it).
With print-after dumps ("IR Dump After X"), the first such dump after the diagnostic names X.
The snapshot is that dump: the IR the pass read (or wrote), where the op the diagnostic's loc points
at is found by its source position (file, line, column)."""

from __future__ import annotations

import bisect
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.store.models import Compilation, Diagnostic, Snapshot
from app.urls import Urls

SEVERITIES = ("remark", "warning", "note")


def _emitter(snapshots: list[Snapshot], log_line: int) -> Snapshot | None:
    """The snapshot of the pass that printed a diagnostic at ``log_line`` (snapshots in log order)."""
    lines = [s.line for s in snapshots]
    at = bisect.bisect_left(lines, log_line)
    after = snapshots[at] if at < len(snapshots) else None
    if after is not None and after.when == "after" and after.kind != "internal":
        return after
    for snapshot in reversed(snapshots[:at]):
        if snapshot.kind != "internal" and snapshot.when == "before":
            return snapshot
    return None


def compilation_remarks(session: Session, compilation: Compilation, urls: Urls) -> list[dict[str, Any]]:
    """[{"message", "severity", "file", "line", "col", "pass", "snapshot" (its URL), "snapshot_index",
    "log_line", "text"}] in log order; "pass" and "snapshot" are null where no dump frames it."""
    diagnostics = session.scalars(
        select(Diagnostic)
        .where(Diagnostic.compilation_pk == compilation.pk, Diagnostic.kind == "mlir",
               Diagnostic.severity.in_(SEVERITIES))
        .order_by(Diagnostic.log_line)
    ).all()
    if not diagnostics:
        return []
    snapshots = sorted((s for s in compilation.snapshots if s.line is not None), key=lambda s: s.line)
    out = []
    for diagnostic in diagnostics:
        same_log = diagnostic.log_name is None or compilation.log_name is None \
            or diagnostic.log_name == compilation.log_name
        emitter = _emitter(snapshots, diagnostic.log_line) if same_log and diagnostic.log_line else None
        out.append({
            "message": diagnostic.message,
            "severity": diagnostic.severity,
            "file": diagnostic.file,
            "line": diagnostic.line,
            "col": diagnostic.col,
            "pass": emitter.pass_name if emitter is not None else None,
            "snapshot": urls.snapshot(compilation.run_id, compilation.ordinal, emitter.index)
            if emitter is not None else None,
            "snapshot_index": emitter.index if emitter is not None else None,
            "log_line": diagnostic.log_line,
            "text": diagnostic.text,
        })
    return out


def by_pass(remarks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The compilation page's list: [{"pass", "snapshot", "snapshot_index", "remarks": [...]}] in the
    order the passes ran; remarks no dump frames come last under pass null."""
    groups: dict[Any, dict[str, Any]] = {}
    for remark in remarks:
        key = remark["snapshot_index"]
        group = groups.setdefault(key, {"pass": remark["pass"], "snapshot": remark["snapshot"],
                                        "snapshot_index": key, "remarks": []})
        group["remarks"].append(remark)
    return sorted(groups.values(), key=lambda g: (g["snapshot_index"] is None, g["snapshot_index"] or 0))


def at_lines(remarks: list[dict[str, Any]], snapshot_index: int, by_source: dict[tuple[str, int], list[int]],
             locs: list) -> list[dict[str, Any]]:
    """The remarks of the pass shown in snapshot ``snapshot_index``, each with the IR lines of the op
    its loc points at: [{..., "ir_lines": [1-based lines]}]. ``by_source`` and ``locs`` are the
    snapshot's (render.Analysis): lines whose primary location is the diagnostic's file and line,
    narrowed to its column where one of them has it."""
    found = []
    for remark in remarks:
        if remark["snapshot_index"] != snapshot_index or not remark["file"] or not remark["line"]:
            continue
        lines = _lines_of(remark["file"], remark["line"], by_source)
        exact = [n for n in lines if n - 1 < len(locs) and locs[n - 1] is not None
                 and getattr(locs[n - 1], "col", None) == remark["col"]]
        found.append({**remark, "ir_lines": exact or lines})
    return found


def _lines_of(file: str, line: int, by_source: dict[tuple[str, int], list[int]]) -> list[int]:
    lines = by_source.get((file, line))
    if lines:
        return lines
    # the same file under another path (a capture moved between machines): match by its tail
    tail = file.replace("\\", "/").rsplit("/", 1)[-1]
    for (other, number), found in by_source.items():
        if number == line and other.replace("\\", "/").rsplit("/", 1)[-1] == tail:
            return found
    return []
