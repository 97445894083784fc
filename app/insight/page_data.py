"""The data behind each page, as plain dicts: the HTML templates and the .json twins share them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import case, func, select, true
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app.insight.launches import launch_table
from app.insight.pass_attribution import attribute_rows
from app.insight.resources import compilation_resources
from app.store.models import Artifact, Compilation, Diagnostic, InputRecord, Problem, Run, Snapshot
from app.urls import Urls, snapshot_id
from parsers.caches.cache import BINARY_ONLY_NOTE, is_binary_only

STAGE_ORDER = ("ttir", "ttgir", "llvm-dialect", "llvm-ir")
ARTIFACT_ORDER = ("source", "ttir", "glir", "ttgir", "llir", "ptx", "amdgcn", "sass", "json", "grp", "cubin", "hsaco")


def iso_time(moment: datetime | None) -> str | None:
    """ISO 8601 with the zone; SQLite hands back naive datetimes, which are UTC here."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.isoformat()


def _ordered_kinds(kinds: set[str]) -> list[str]:
    return [kind for kind in ARTIFACT_ORDER if kind in kinds] + sorted(kinds - set(ARTIFACT_ORDER))


def _run_artifact_kinds(session: Session, run_id: str) -> dict[int, list[str]]:
    """Each compilation's artifact kinds, for a whole run in one query (not one per compilation)."""
    found: dict[int, set[str]] = {}
    for compilation_pk, kind in session.execute(
        select(Artifact.compilation_pk, Artifact.kind).distinct()
        .join(Compilation, Compilation.pk == Artifact.compilation_pk).where(Compilation.run_id == run_id)
    ):
        found.setdefault(compilation_pk, set()).add(kind)
    return {pk: _ordered_kinds(kinds) for pk, kinds in found.items()}


def diagnostic_dict(diagnostic: Diagnostic) -> dict:
    return {
        "kind": diagnostic.kind,
        "severity": diagnostic.severity,
        "message": diagnostic.message,
        "file": diagnostic.file,
        "line": diagnostic.line,
        "col": diagnostic.col,
        "text": diagnostic.text,
        "log": diagnostic.log_name,
        "log_line": diagnostic.log_line,
    }


def compilation_summary(compilation: Compilation, urls: Urls, artifact_kinds: list[str] | None = None) -> dict:
    """`artifact_kinds`: read from the compilation's artifacts when not given."""
    counts = compilation.counts or {}
    if artifact_kinds is None:
        artifact_kinds = _ordered_kinds({artifact.kind for artifact in compilation.artifacts})
    return {
        "id": compilation.ordinal,
        "kernel": compilation.kernel,
        "target": compilation.target,
        "triton_version": compilation.triton_version,
        "status": compilation.status,
        "status_reason": compilation.status_reason,
        "failed_pass": compilation.failed_pass,
        "snapshots": {kind: counts.get(kind, 0) for kind in ("mlir", "internal", "llvm", "tvmscript")
                      if kind != "tvmscript" or kind in counts},
        "changed": compilation.changed,
        "artifacts": artifact_kinds,
        "num_warps": compilation.num_warps,
        "num_stages": compilation.num_stages,
        "num_ctas": compilation.num_ctas,
        "shared": compilation.shared,
        "compile_seconds": compilation.compile_seconds,
        "origin": compilation.origin,
        "log": compilation.log_name,
        "cache": compilation.cache_key,
        "cache_match": compilation.cache_match,
        "url": urls.compilation(compilation.run_id, compilation.ordinal),
        "history_url": urls.kernel(compilation.kernel) if compilation.kernel else None,
    }


def _snapshot_stages(session: Session, compilation_pks: list[int]) -> dict[int, list[str]]:
    """Which IR stages each compilation has snapshots of, in pipeline order."""
    if not compilation_pks:
        return {}
    rows = session.execute(
        select(Snapshot.compilation_pk, Snapshot.stage)
        .where(Snapshot.compilation_pk.in_(compilation_pks))
        .group_by(Snapshot.compilation_pk, Snapshot.stage)
    ).all()
    found: dict[int, set[str]] = {}
    for compilation_pk, stage in rows:
        found.setdefault(compilation_pk, set()).add(stage)
    return {
        pk: [stage for stage in STAGE_ORDER if stage in stages] + sorted(stages - set(STAGE_ORDER))
        for pk, stages in found.items()
    }


def run_summary(session: Session, run: Run, urls: Urls, warnings: bool = True) -> dict:
    """The run's summary; `warnings=False` leaves its warnings out (the run page groups them itself)."""
    run_diagnostics = session.scalars(
        select(Diagnostic).where(Diagnostic.run_id == run.id, Diagnostic.compilation_pk.is_(None))
    ).all()
    # plain rows, not objects: a big capture has thousands of warnings
    problems = session.execute(select(Problem.kind, Problem.message, Problem.path, Problem.line, Problem.header)
                               .where(Problem.run_id == run.id).order_by(Problem.pk)).all() if warnings else []
    compilations = list(run.compilations)
    by_pk = {c.pk: c for c in compilations}
    stages = _snapshot_stages(session, list(by_pk))
    compilation_diagnostics = session.scalars(
        select(Diagnostic)
        .where(Diagnostic.run_id == run.id, Diagnostic.compilation_pk.is_not(None))
        .order_by(Diagnostic.pk)
    ).all()
    kinds = _run_artifact_kinds(session, run.id)
    summaries = []
    for compilation in compilations:
        summary = compilation_summary(compilation, urls, kinds.get(compilation.pk, []))
        summary["stages"] = stages.get(compilation.pk, [])
        summary["resources"] = compilation_resources(compilation)  # as stored: no .amdgcn read per row
        summaries.append(summary)
    return {
        "run": run.id,
        "url": urls.run(run.id),
        "title": run.title,
        "created_at": iso_time(run.created_at),
        "owner": run.owner,
        "listed": bool(run.listed),
        "tags": run.tags or [],
        "labels": run.labels or {},
        "input_bytes": run.input_bytes,
        "compilations": summaries,
        "diagnostics": [diagnostic_dict(d) for d in run_diagnostics],
        "damaged": run.damaged,
        "warnings": [
            {"kind": p.kind, "message": p.message, "path": p.path, "line": p.line, "header": p.header}
            for p in problems
        ],
        # Diagnostics that belong to one compilation (a failed one's verifier error, say).
        "compilation_diagnostics": [
            {
                **diagnostic_dict(d),
                "compilation": by_pk[d.compilation_pk].ordinal,
                "kernel": by_pk[d.compilation_pk].kernel,
                "compilation_url": urls.compilation(run.id, by_pk[d.compilation_pk].ordinal),
            }
            for d in compilation_diagnostics
            if d.compilation_pk in by_pk
        ],
        "logs": [
            {
                "id": record.pk,
                "path": record.path,
                "size": record.size,
                "role": record.role,
                "note": record.note,
                "url": urls.run_log(run.id, record.pk) if record.log_blob else None,
            }
            for record in input_records(session, run.id)
        ],
        "stats": run.stats or {},
    }


def snapshot_dict(run_id: str, ordinal: int, snapshot: Snapshot, urls: Urls) -> dict:
    snapshot_key = snapshot_id(run_id, ordinal, snapshot.index)
    base = snapshot.base_index
    previous_key = snapshot_id(run_id, ordinal, base) if base is not None else None
    return {
        "index": snapshot.index,
        "pass": snapshot.pass_name,
        "pass_arg": snapshot.pass_arg,
        "pass_options": snapshot.pass_options,
        "when": snapshot.when,
        "kind": snapshot.kind,
        "scope": snapshot.scope,
        "scope_kind": snapshot.scope_kind,
        "base": base,  # the snapshot this one is compared with: the previous one of the same scope
        "passes_without_dump": json.loads(snapshot.trace) if snapshot.trace else [],
        "stage": snapshot.stage,
        "changed": snapshot.changed,
        "failed": snapshot.failed,
        "lines": snapshot.line_count,
        "bytes": snapshot.size,
        "log_line": snapshot.line,
        "blob": snapshot.blob,
        "id": snapshot_key,
        "url": urls.snapshot(run_id, ordinal, snapshot.index),
        "raw_url": urls.snapshot_raw(run_id, ordinal, snapshot.index),
        "diff_prev_url": urls.diff(previous_key, snapshot_key) if previous_key else None,
    }


def compilation_detail(session: Session, compilation: Compilation, urls: Urls) -> dict:
    from app import render  # the render caches live there; imported late to keep this module light
    from app.highlight.hwops import retarget
    from app.layouts.cvt_costs import counts_by_kind
    from app.layouts.smem_costs import counts_by_digest

    run_id, ordinal = compilation.run_id, compilation.ordinal
    data = compilation_summary(compilation, urls)
    data["run"] = run_id
    data["run_url"] = urls.run(run_id)
    snapshots = list(compilation.snapshots)
    data["snapshots"] = [snapshot_dict(run_id, ordinal, s, urls) for s in snapshots]
    attribute_rows(data["snapshots"])
    # hardware-op counts per pass, computed once per distinct blob (and cached by its hash)
    ops_by_blob: dict[str, dict[str, int]] = {}
    for snapshot in snapshots:
        if snapshot.blob not in ops_by_blob:
            digest = snapshot.blob
            ops_by_blob[digest] = render.ops_counts(digest, lambda digest=digest: render.blob_reader.text(session, digest))
    pass_ms = _pass_times(snapshots, list(compilation.timings))
    for row, snapshot in zip(data["snapshots"], snapshots, strict=True):
        # a TTIR snapshot names no target: its descriptor ops count for the compilation's
        row["ops"] = retarget(ops_by_blob[snapshot.blob], compilation.target)
        # what this pass's ttg.convert_layout ops cost when lowered: {"shared": 3, "shuffles": 1, ...}
        row["conversions"] = counts_by_kind(
            snapshot.blob, lambda digest=snapshot.blob: render.blob_reader.text(session, digest))
        # its shared-memory accesses and how many conflict: {"accesses": 6, "with_conflicts": 1, ...}
        row["bank_conflicts"] = counts_by_digest(
            snapshot.blob, lambda digest=snapshot.blob: render.blob_reader.text(session, digest))
        row["ms"] = pass_ms.get(snapshot.index)
    data["stages"] = _stage_groups(data["snapshots"])
    data["snapshot_counts"] = compilation_summary(compilation, urls)["snapshots"]
    data["files"] = [
        {
            "kind": a.kind,
            "path": a.path,
            "name": a.path.replace("\\", "/").rsplit("/", 1)[-1],
            "size": a.size,
            "sha256": a.sha256,
            "url": urls.artifact(run_id, ordinal, a.pk) if a.blob else None,
            "view_url": urls.artifact_view(run_id, ordinal, a.pk) if a.blob else None,
        }
        for a in sorted(compilation.artifacts, key=artifact_sort_key)
    ]
    data["sass"] = _sass_summary(session, compilation, render)
    # why a compilation from the cache shows no passes: its entry was stored binary-only
    kinds = {artifact.kind for artifact in compilation.artifacts}
    data["binary_only"] = (BINARY_ONLY_NOTE[0].upper() + BINARY_ONLY_NOTE[1:] + ".") if is_binary_only(kinds) else None
    data["timings"] = [
        {"report": t.report, "name": t.name, "depth": t.depth, "wall": t.wall, "percent": t.percent,
         "analysis": t.analysis}
        for t in compilation.timings
    ]
    diagnostics = session.scalars(select(Diagnostic).where(Diagnostic.compilation_pk == compilation.pk)).all()
    data["diagnostics"] = [diagnostic_dict(d) for d in diagnostics]
    data["metadata"] = compilation.metadata_json
    data["launches"] = launch_table(compilation)
    data["map_url"] = urls.source_map(run_id, ordinal)
    return data


def _sass_summary(session: Session, compilation: Compilation, render) -> dict | None:
    """The kernel's SASS instruction groups (from its sass artifact), or why there is no SASS beside
    its cubin; None for a compilation without a cubin."""
    from app.highlight.hwops import GROUPS

    sass = [a for a in compilation.artifacts if a.kind == "sass" and a.blob]
    if not sass:
        if not any(a.kind == "cubin" for a in compilation.artifacts):
            return None
        return {"ops": None, "note": "No SASS: the cubin was not disassembled when this run was stored (no nvdisasm "
                "or cuobjdump was found, or it failed on this cubin: the run's warnings say which)."}
    counts = render.sass_counts(sass[0].blob, lambda: render.blob_reader.text(session, sass[0].blob))
    return {
        "ops": [{"key": g.key, "label": g.label, "count": counts[g.key]} for g in GROUPS if counts.get(g.key)],
        "note": None,
    }


def artifact_sort_key(artifact: Artifact) -> tuple[int, str]:
    """Stage order (source, ttir, ttgir, llir, ptx...), then path."""
    rank = ARTIFACT_ORDER.index(artifact.kind) if artifact.kind in ARTIFACT_ORDER else len(ARTIFACT_ORDER)
    return rank, artifact.path


def _stage_groups(snapshots: list[dict]) -> list[dict]:
    """Consecutive snapshots of one stage: {"stage", "first", "last", "count", "changed"}."""
    groups: list[dict] = []
    for row in snapshots:
        if not groups or groups[-1]["stage"] != row["stage"]:
            groups.append({"stage": row["stage"], "first": row["index"], "last": row["index"], "count": 0, "changed": 0})
        group = groups[-1]
        group["last"] = row["index"]
        group["count"] += 1
        group["changed"] += 1 if row["changed"] else 0
    return groups


_NOT_A_PASS = frozenset({"Rest", "Total"})


def _pass_times(snapshots: list[Snapshot], timings: list) -> dict[int, float]:
    """Milliseconds per snapshot's pass, matching timing entries to passes by name, in order.

    Timing reports list passes in the order they ran, and dumps come in the same order, but
    either side can have extras: a nested canonicalizer dumps without a report row of its own,
    and analyses or pipelines have rows without dumps. So the two name sequences are aligned
    (longest common subsequence), which keeps every match in order and skips extras on both
    sides. A pass run on each function of a nested pipeline (consecutive op-scoped dumps) has
    one aggregated row, given to the first of those dumps. Analyses, pipelines, "Rest" and
    "Total" are not passes.
    """
    entries = [
        t for t in timings if not t.analysis and t.name not in _NOT_A_PASS and not t.name.endswith(" Pipeline")
    ]
    dumps: list[Snapshot] = []
    previous: tuple[str, bool] | None = None
    for snapshot in snapshots:
        if snapshot.kind != "mlir":
            continue
        op_scoped = bool(snapshot.scope) and not snapshot.scope.startswith("builtin.module")
        key = (snapshot.pass_name, op_scoped)
        if not (op_scoped and previous == key):  # the same nested pass on the next function
            dumps.append(snapshot)
        previous = key
    if not dumps or not entries:
        return {}
    rows, cols = len(dumps), len(entries)
    # common[i][j]: matches possible between dumps[i:] and entries[j:]
    common = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if dumps[i].pass_name == entries[j].name:
                common[i][j] = common[i + 1][j + 1] + 1
            else:
                common[i][j] = max(common[i + 1][j], common[i][j + 1])
    times: dict[int, float] = {}
    i = j = 0
    while i < rows and j < cols:
        if dumps[i].pass_name == entries[j].name and common[i][j] == common[i + 1][j + 1] + 1:
            times[dumps[i].index] = round(entries[j].wall * 1000, 3)
            i += 1
            j += 1
        elif common[i + 1][j] >= common[i][j + 1]:
            i += 1
        else:
            j += 1
    return times


def recent_runs(
    session: Session, urls: Urls, limit: int = 50, kernel_preview: int = 6, visible: ColumnElement[bool] | None = None
) -> list[dict]:
    """The newest runs; `visible` (from app.web.auth.visible_runs) keeps those the reader may list."""
    counts = (
        select(
            Compilation.run_id,
            func.count(Compilation.pk).label("n"),
            func.sum(case((Compilation.status == "failed", 1), else_=0)).label("failed"),
        )
        .group_by(Compilation.run_id)
        .subquery()
    )
    rows = session.execute(
        select(Run, counts.c.n, counts.c.failed)
        .outerjoin(counts, counts.c.run_id == Run.id)
        .where(true() if visible is None else visible)
        .order_by(Run.created_at.desc())
        .limit(limit)
    ).all()
    kernels: dict[str, list[str]] = {}
    targets: dict[str, list[str]] = {}
    run_ids = [run.id for run, _, _ in rows]
    if run_ids:
        named = session.execute(
            select(Compilation.run_id, Compilation.kernel, Compilation.target)
            .where(Compilation.run_id.in_(run_ids))
            .order_by(Compilation.run_id, Compilation.ordinal)
        ).all()
        for run_id, kernel, target in named:
            if kernel and kernel not in kernels.setdefault(run_id, []):
                kernels[run_id].append(kernel)
            if target and target not in targets.setdefault(run_id, []):
                targets[run_id].append(target)
    return [
        {
            "run": run.id,
            "title": run.title,
            "created_at": iso_time(run.created_at),
            "owner": run.owner,
            "tags": run.tags or [],
            "labels": run.labels or {},
            "compilations": n or 0,
            "damaged": run.damaged,
            "url": urls.run(run.id),
            "failed": int(failed or 0),
            "kernel_count": len(kernels.get(run.id, [])),
            "kernels": kernels.get(run.id, [])[:kernel_preview],
            "targets": targets.get(run.id, []),
            "input_bytes": run.input_bytes,
        }
        for run, n, failed in rows
    ]


def input_records(session: Session, run_id: str) -> list[InputRecord]:
    return list(session.scalars(select(InputRecord).where(InputRecord.run_id == run_id).order_by(InputRecord.pk)))
