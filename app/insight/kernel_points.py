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
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from app.insight.autotune import by_compilation, run_autotune
from app.insight.comparisons import FINAL_STAGES, Side, final_stages
from app.insight.kernel_config import compilation_config, tile_text
from app.insight.resources import compilation_resources
from app.store.generation import bump_history
from app.store.models import Compilation, KernelPoint, ProfileKernel, Run, Snapshot
from app.urls import Urls, compilation_id

SERIES_OPTIONS = ("num_warps", "num_stages", "num_ctas")
IR_STAGES = {"ttgir": "ttgir", "llir": "llir", "asm": None, "sass": "sass"}  # asm: ptx or amdgcn


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


def _stage_facts(session: Session, compilation: Compilation) -> tuple[dict[str, int], dict[str, int]]:
    """IR lines per final stage and the op groups of the final TTGIR (the compare page's reading)."""
    snapshots = list(session.scalars(select(Snapshot).where(Snapshot.compilation_pk == compilation.pk)
                                     .order_by(Snapshot.index)))
    stages = final_stages(session, Side(compilation_id(compilation.run_id, compilation.ordinal), compilation,
                                        compilation.run, snapshots))
    lines: dict[str, int] = {}
    for key, _label, _kinds, _stage in FINAL_STAGES:
        entry = stages.get(key)
        if entry and entry.get("lines") is not None:
            name = entry["kind"] if key == "asm" and entry.get("kind") in ("ptx", "amdgcn") else key
            lines[name] = entry["lines"]
    ops = {group: count for group, count in ((stages.get("ttgir") or {}).get("ops") or {}).items() if count}
    return lines, ops


def compute_points(session: Session, run: Run) -> list[dict[str, Any]]:
    """The rows of `kernel_points` for a stored run (one per compilation with a kernel name)."""
    compilations = [c for c in session.scalars(select(Compilation).where(Compilation.run_id == run.id)
                                                .order_by(Compilation.ordinal)) if c.kernel]
    if not compilations:
        return []
    times = _times(session, run)
    autotune = by_compilation(run_autotune(session, run, Urls())) if run.autotune else {}
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
        lines, ops = _stage_facts(session, compilation)
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
    """(Re)write a run's points: at ingest, and for runs stored before points existed."""
    session.flush()
    rows = compute_points(session, run)
    session.execute(delete(KernelPoint).where(KernelPoint.run_id == run.id))
    if rows:
        session.execute(insert(KernelPoint.__table__), rows)
    bump_history(session)
    return len(rows)


def backfill_points(session: Session) -> int:
    """Points for the runs stored before they existed (runs with compilations and no point)."""
    missing = select(Run).where(~select(KernelPoint.run_id).where(KernelPoint.run_id == Run.id).exists(),
                                select(Compilation.pk).where(Compilation.run_id == Run.id,
                                                             Compilation.kernel.is_not(None)).exists())
    done = 0
    for run in session.scalars(missing).all():
        done += write_points(session, run)
        session.commit()
    return done
