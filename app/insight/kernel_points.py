"""A compilation as a point of its kernel's history: the numbers the history pages and `irlens
check` read (registers, spill bytes, shared memory, occupancy, time per launch, autotune time and
pick, IR lines per stage, op groups of the final TTGIR, status), summed up once when its run is
stored and kept in `kernel_points`, so a kernel's history over thousands of runs is one indexed read.

Identity across runs: the same kernel name on the same target is the same kernel; each
specialisation is its own series, keyed by its config: the constexprs where recorded, else the tile
derived from the IR, plus num_warps, num_stages and num_ctas. Two compilations of one run with the
same config (other argument types, say) get `variant` 2, 3... so they never merge."""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from app import foreground, render
from app.insight.autotune import by_compilation, run_autotune
from app.insight.kernel_config import compilation_config, tile_text
from app.insight.resources import compilation_resources
from app.store.generation import bump_history
from app.store.models import Artifact, Blob, Compilation, KernelPoint, ProfileKernel, Run, Snapshot
from app.urls import Urls, compilation_id

VERSION = 1  # of what a point holds: runs whose points_version is older are written again
FAILED = -1  # points_version of a run whose points could not be written (logged; not retried)
SERIES_OPTIONS = ("num_warps", "num_stages", "num_ctas")
log = logging.getLogger("irlens")


def series_config(config: dict[str, Any]) -> dict[str, Any]:
    """What keys a series (app/insight/kernel_config.py's config): constexprs, else the derived tile,
    then the launch options."""
    out: dict[str, Any] = {}
    if config["constexprs"]:
        out.update({str(key): value for key, value in sorted(config["constexprs"].items())})
    elif config["tile"]:
        out["tile"] = tile_text(config["tile"])
    for key in SERIES_OPTIONS:
        if config["options"].get(key) is not None:
            out[key] = config["options"][key]
    return out


def series_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def _times(session: Session, run: Run) -> dict[int, float]:
    """Mean time per launch of each profiled compilation (a Proton kernel's time is its launches' sum)."""
    sums: dict[int, list[float]] = {}
    rows = session.execute(select(ProfileKernel.compilation_pk, ProfileKernel.time_ns, ProfileKernel.count)
                           .where(ProfileKernel.run_id == run.id, ProfileKernel.compilation_pk.is_not(None),
                                  ProfileKernel.time_ns.is_not(None)))
    for pk, time_ns, count in rows:
        total = sums.setdefault(pk, [0.0, 0])
        total[0] += time_ns
        total[1] += count or 1
    return {pk: total / launches for pk, (total, launches) in sums.items() if launches}


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _stage_facts(session: Session, pks: list[int]) -> dict[int, tuple[dict[str, int], dict[str, int]]]:
    """Per compilation: IR lines of the final TTGIR, LLVM IR, PTX/AMDGCN and SASS, and the op groups of
    the final TTGIR, as the compare page reads them (app/insight/comparisons.py final_stages: the cache
    file of the stage, else the last dump of it), in three queries for the whole run."""
    files: dict[int, dict[str, tuple[str, str]]] = {}
    for pk, kind, digest in session.execute(
            select(Artifact.compilation_pk, Artifact.kind, Artifact.blob)
            .where(Artifact.compilation_pk.in_(pks), Artifact.kind.in_(("ttgir", "llir", "ptx", "amdgcn", "sass")),
                   Artifact.blob.is_not(None)).order_by(Artifact.pk)):
        files.setdefault(pk, {}).setdefault(kind, digest)
    last: dict[tuple[int, str], tuple[int, int]] = {}  # (compilation, stage) -> (lines, blob id) of its last dump
    for pk, stage, line_count, blob_id in session.execute(
            select(Snapshot.compilation_pk, Snapshot.stage, Snapshot.line_count, Snapshot.blob_id)
            .where(Snapshot.compilation_pk.in_(pks), Snapshot.stage.in_(("ttgir", "llvm-ir")))
            .order_by(Snapshot.compilation_pk, Snapshot.index)):
        last[(pk, stage)] = (line_count, blob_id)
    wanted = {blob_id for (pk, stage), (_, blob_id) in last.items() if stage == "ttgir" and "ttgir" not in files.get(pk, {})}
    hashes: dict[int, str] = {}
    ordered = sorted(wanted)
    for start in range(0, len(ordered), 500):
        hashes.update(session.execute(select(Blob.id, Blob.hash).where(Blob.id.in_(ordered[start:start + 500]))).all())

    def text(digest: str) -> str:
        return render.blob_reader.text(session, digest) or ""

    out = {}
    for pk in pks:
        mine, lines, ttgir = files.get(pk, {}), {}, None
        for kind in ("ttgir", "llir", "ptx", "amdgcn", "sass"):
            if kind in mine:
                lines[kind] = _lines(text(mine[kind]))
        for kind, stage in (("ttgir", "ttgir"), ("llir", "llvm-ir")):
            if kind not in lines and (pk, stage) in last:
                lines[kind] = last[(pk, stage)][0]
        ttgir = mine.get("ttgir") or hashes.get(last.get((pk, "ttgir"), (0, None))[1])
        ops = render.ops_counts(ttgir, lambda ttgir=ttgir: text(ttgir)) if ttgir else {}
        out[pk] = (lines, {group: count for group, count in ops.items() if count})
    return out


def compute_points(session: Session, run: Run) -> list[dict[str, Any]]:
    """The rows of `kernel_points` for a stored run (one per compilation with a kernel name)."""
    compilations = [c for c in session.scalars(select(Compilation).where(Compilation.run_id == run.id)
                                                .order_by(Compilation.ordinal)) if c.kernel]
    if not compilations:
        return []
    times = _times(session, run)
    autotune = by_compilation(run_autotune(session, run, Urls())) if run.autotune else {}
    facts = _stage_facts(session, [c.pk for c in compilations])
    seen: dict[tuple, int] = {}
    rows = []
    for compilation in compilations:
        config = series_config(compilation_config(session, compilation))
        identity = (compilation.kernel, compilation.target, series_key(config))
        seen[identity] = seen.get(identity, 0) + 1
        if seen[identity] > 1:
            config["variant"] = seen[identity]
        resources = compilation_resources(compilation, session) or {}
        tuned = autotune.get(compilation_id(compilation.run_id, compilation.ordinal))
        tuned_times = [t["time_ms"] for t in (tuned or {}).get("times", [])
                       if t.get("time_ms") is not None and t.get("status") != "failed"]
        lines, ops = facts[compilation.pk]
        rows.append({
            "compilation_pk": compilation.pk, "run_id": run.id, "created_at": run.created_at,
            "kernel": compilation.kernel[:500], "target": compilation.target, "series": series_key(config),
            "config": config, "triton_version": compilation.triton_version, "status": compilation.status,
            "registers": resources.get("registers"),
            "spill_bytes": resources.get("local_bytes") if resources else None,
            "shared_bytes": resources.get("shared_bytes"),
            "occupancy": resources.get("occupancy"),
            "time_ns": times.get(compilation.pk),
            "autotune_ms": min(tuned_times) if tuned_times else None,
            "picked": bool(tuned["won"]) if tuned else None,
            "passes_changed": compilation.changed,
            "ir_lines": lines, "ops": ops,
        })
    return rows


def write_points(session: Session, run: Run) -> int:
    """(Re)write a run's points and mark it done (`runs.points_version`)."""
    session.flush()
    rows = compute_points(session, run)
    session.execute(delete(KernelPoint).where(KernelPoint.run_id == run.id))
    if rows:
        session.execute(insert(KernelPoint.__table__), rows)
    run.points_version = VERSION
    bump_history(session)
    return len(rows)


def ensure_points(session: Session, run_ids: list[str] | None = None, limit: int = 100, wait: bool = True) -> int:
    """Write the points of the runs that have none yet (of `run_ids`, or any `limit` of them), each
    committed on its own. Not at ingest: they re-read stored texts (the TTIR's tile, the final TTGIR's
    ops, the cache files' lines), which would add a tenth to an ingest; so the server's background round
    writes them after each upload, and whatever reads points first writes those still missing. A run
    another process is writing is waited for, so that a page shows it (PostgreSQL's row lock; SQLite: one
    writer at a time), or skipped with `wait=False` (the background round: the writer finishes it)."""
    statement = select(Run.id).where(Run.points_version.is_(None))
    if run_ids is not None:
        statement = statement.where(Run.id.in_(run_ids))
    pending = session.scalars(statement.order_by(Run.created_at).limit(limit)).all()
    done = 0
    for run_id in pending:
        foreground.give_way()  # nothing locked here: the last run is committed
        run = session.scalars(select(Run).where(Run.id == run_id, Run.points_version.is_(None))
                              .with_for_update(skip_locked=not wait)).first()
        if run is None:  # written meanwhile, deleted, or being written by another process
            session.rollback()
            continue
        try:
            done += write_points(session, run)
            session.commit()
        except Exception:  # one run that cannot be summed up must not fail every page
            session.rollback()
            log.exception("kernel history: the points of run %s could not be written", run_id)
            session.execute(update(Run.__table__).where(Run.__table__.c.id == run_id).values(points_version=FAILED))
            session.commit()
    return done


def backfill_points(session: Session) -> int:
    """Points for every run that has none yet (`irlens index --backfill`)."""
    total = 0
    while True:
        before = session.scalar(select(func.count()).select_from(Run).where(Run.points_version.is_(None)))
        if not before:
            return total
        total += ensure_points(session, limit=100)
        after = session.scalar(select(func.count()).select_from(Run).where(Run.points_version.is_(None)))
        if after >= before:  # the rest are being written by another process
            return total
