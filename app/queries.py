"""The data behind each page, as plain dicts: the HTML templates and the .json twins share them."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Artifact, Compilation, Diagnostic, InputRecord, Problem, Run, Snapshot
from app.urls import Urls, snapshot_id

ARTIFACT_ORDER = ("source", "ttir", "glir", "ttgir", "llir", "ptx", "amdgcn", "sass", "json", "grp", "cubin", "hsaco")


def _artifact_kinds(compilation: Compilation) -> list[str]:
    kinds = {artifact.kind for artifact in compilation.artifacts}
    return [kind for kind in ARTIFACT_ORDER if kind in kinds] + sorted(kinds - set(ARTIFACT_ORDER))


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


def compilation_summary(compilation: Compilation, urls: Urls) -> dict:
    counts = compilation.counts or {}
    return {
        "id": compilation.ordinal,
        "kernel": compilation.kernel,
        "target": compilation.target,
        "triton_version": compilation.triton_version,
        "status": compilation.status,
        "status_reason": compilation.status_reason,
        "snapshots": {kind: counts.get(kind, 0) for kind in ("mlir", "internal", "llvm")},
        "changed": compilation.changed,
        "artifacts": _artifact_kinds(compilation),
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
    }


def run_summary(session: Session, run: Run, urls: Urls) -> dict:
    run_diagnostics = session.scalars(
        select(Diagnostic).where(Diagnostic.run_id == run.id, Diagnostic.compilation_pk.is_(None))
    ).all()
    problems = session.scalars(select(Problem).where(Problem.run_id == run.id).order_by(Problem.pk)).all()
    return {
        "run": run.id,
        "url": urls.run(run.id),
        "title": run.title,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "owner": run.owner,
        "tags": run.tags or [],
        "input_bytes": run.input_bytes,
        "compilations": [compilation_summary(c, urls) for c in run.compilations],
        "diagnostics": [diagnostic_dict(d) for d in run_diagnostics],
        "damaged": run.damaged,
        "warnings": [
            {"kind": p.kind, "message": p.message, "path": p.path, "line": p.line, "header": p.header}
            for p in problems
        ],
    }


def snapshot_dict(run_id: str, ordinal: int, snapshot: Snapshot, urls: Urls) -> dict:
    return {
        "index": snapshot.index,
        "pass": snapshot.pass_name,
        "pass_arg": snapshot.pass_arg,
        "pass_options": snapshot.pass_options,
        "when": snapshot.when,
        "kind": snapshot.kind,
        "scope": snapshot.scope,
        "stage": snapshot.stage,
        "changed": snapshot.changed,
        "failed": snapshot.failed,
        "lines": snapshot.line_count,
        "bytes": snapshot.size,
        "log_line": snapshot.line,
        "blob": snapshot.blob,
        "id": snapshot_id(run_id, ordinal, snapshot.index),
        "url": urls.snapshot(run_id, ordinal, snapshot.index),
        "raw_url": urls.snapshot_raw(run_id, ordinal, snapshot.index),
    }


def compilation_detail(session: Session, compilation: Compilation, urls: Urls) -> dict:
    run_id, ordinal = compilation.run_id, compilation.ordinal
    data = compilation_summary(compilation, urls)
    data["run"] = run_id
    data["run_url"] = urls.run(run_id)
    data["snapshots"] = [snapshot_dict(run_id, ordinal, s, urls) for s in compilation.snapshots]
    data["snapshot_counts"] = compilation_summary(compilation, urls)["snapshots"]
    data["files"] = [
        {
            "kind": a.kind,
            "path": a.path,
            "size": a.size,
            "sha256": a.sha256,
            "url": urls.artifact(run_id, ordinal, a.pk) if a.blob else None,
        }
        for a in compilation.artifacts
    ]
    data["timings"] = [
        {"report": t.report, "name": t.name, "depth": t.depth, "wall": t.wall, "percent": t.percent,
         "analysis": t.analysis}
        for t in compilation.timings
    ]
    diagnostics = session.scalars(select(Diagnostic).where(Diagnostic.compilation_pk == compilation.pk)).all()
    data["diagnostics"] = [diagnostic_dict(d) for d in diagnostics]
    data["metadata"] = compilation.metadata_json
    return data


def recent_runs(session: Session, urls: Urls, limit: int = 50) -> list[dict]:
    counts = (
        select(Compilation.run_id, func.count(Compilation.pk).label("n"))
        .group_by(Compilation.run_id)
        .subquery()
    )
    rows = session.execute(
        select(Run, counts.c.n).outerjoin(counts, counts.c.run_id == Run.id).order_by(Run.created_at.desc()).limit(limit)
    ).all()
    return [
        {
            "run": run.id,
            "title": run.title,
            "created_at": run.created_at.isoformat() if run.created_at else None,
            "owner": run.owner,
            "tags": run.tags or [],
            "compilations": n or 0,
            "damaged": run.damaged,
            "url": urls.run(run.id),
        }
        for run, n in rows
    ]


def input_records(session: Session, run_id: str) -> list[InputRecord]:
    return list(session.scalars(select(InputRecord).where(InputRecord.run_id == run_id).order_by(InputRecord.pk)))
