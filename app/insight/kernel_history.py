"""A kernel's history across runs (/kernels/NAME) and the list of kernels (/kernels), from the
points stored at ingest (app/insight/kernel_points.py), flagged between consecutive points
(app/insight/kernel_flags.py). Only runs the reader may list are read (`visible`, as search does);
a deleted run takes its points with it."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from sqlalchemy import func, select, true
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app.insight.comparisons import CompareNotFound, load_side, op_counts
from app.insight.kernel_flags import Thresholds, series_flags
from app.insight.page_data import iso_time
from app.insight.pass_alignment import align, effects, first_effect_divergence, moves
from app.store.generation import history_generation
from app.store.labels import version_key
from app.store.models import Compilation, KernelPoint, Run
from app.urls import Urls, compilation_id

MAX_POINTS = 5000
SPARK_POINTS = 30
KERNELS_SHOWN = 500
POINT_COLUMNS = (KernelPoint.compilation_pk, KernelPoint.run_id, KernelPoint.created_at, KernelPoint.target,
                 KernelPoint.series, KernelPoint.triton_version, KernelPoint.status,
                 KernelPoint.registers, KernelPoint.spill_bytes, KernelPoint.shared_bytes, KernelPoint.occupancy,
                 KernelPoint.time_ns, KernelPoint.autotune_ms, KernelPoint.picked, KernelPoint.passes_changed,
                 KernelPoint.ir_lines, KernelPoint.ops, Compilation.ordinal, Compilation.origin, Run.labels, Run.title)
# The config is the series key's JSON (app/insight/kernel_points.py), read once per series, not per point.


def _visible(visible: ColumnElement[bool] | None) -> ColumnElement[bool]:
    return true() if visible is None else visible


def _whole(value: float | None) -> float | int | None:
    """Occupancy is warps per SM (NVIDIA) or waves per SIMD (AMD): whole numbers, stored as floats."""
    return int(value) if value is not None and float(value).is_integer() else value


def config_of(row: Any) -> dict[str, Any]:
    try:
        return json.loads(row.series)
    except ValueError:
        return {}


def _public(point: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in point.items() if not key.startswith("_")}


def point_dict(row: Any, urls: Urls) -> dict[str, Any]:
    cid = compilation_id(row.run_id, row.ordinal)
    return {
        "run": row.run_id, "run_url": urls.run(row.run_id), "run_title": row.title or "",
        "labels": row.labels or {}, "created_at": iso_time(row.created_at),
        "compilation": urls.compilation(row.run_id, row.ordinal), "compilation_id": cid,
        "triton_version": row.triton_version, "status": row.status,
        "registers": row.registers, "spill_bytes": row.spill_bytes, "shared_bytes": row.shared_bytes,
        "occupancy": _whole(row.occupancy), "time_ns": row.time_ns, "autotune_ms": row.autotune_ms, "picked": row.picked,
        "ir_lines": row.ir_lines or {}, "passes_changed": row.passes_changed, "ops": row.ops or {},
        "_dumps": row.origin == "log",  # pass dumps: without them, no first effect pass to look for
    }


def points_query(visible: ColumnElement[bool] | None):
    return (select(*POINT_COLUMNS).join(Compilation, Compilation.pk == KernelPoint.compilation_pk)
            .join(Run, Run.id == KernelPoint.run_id).where(_visible(visible)))


# First effect passes already found, by the two compilations' keys: the pair's texts never change.
_EFFECTS: OrderedDict[tuple, str | None] = OrderedDict()


def first_effect_pass(session: Session, a_id: str, b_id: str, keys: tuple[int, int]) -> str | None:
    """The compare page's first pass whose effect differs between two compilations (None: none, or
    neither has pass dumps)."""
    keys = (session.get_bind().url.render_as_string(hide_password=True), *keys)  # pks are per database
    if keys in _EFFECTS:
        _EFFECTS.move_to_end(keys)
        return _EFFECTS[keys]
    try:
        a, b = load_side(session, a_id), load_side(session, b_id)
    except CompareNotFound:
        return None
    found = None
    if a.snapshots and b.snapshots:
        pairs = align(a.steps, b.steps)
        a_ops, b_ops = op_counts(session, a.snapshots), op_counts(session, b.snapshots)
        moved = moves(a.steps, b.steps, pairs)
        partner = {m.a_row: m.b_row for m in moved} | {m.b_row: m.a_row for m in moved}
        effect = first_effect_divergence(pairs, effects(a.steps, [a_ops[s.blob] for s in a.snapshots]),
                                         effects(b.steps, [b_ops[s.blob] for s in b.snapshots]), partner)
        if effect is not None:
            pair = pairs[effect[0]]
            found = (a.snapshots[pair.a] if pair.a is not None else b.snapshots[pair.b]).pass_name
    _EFFECTS[keys] = found
    if len(_EFFECTS) > 4096:
        _EFFECTS.popitem(last=False)
    return found


def flag_dicts(session: Session, points: list[dict[str, Any]], keys: list[int], thresholds: Thresholds,
               urls: Urls) -> list[dict[str, Any]]:
    """The flags of one series' points (in the order shown), each with its runs, compare link and
    first effect pass."""
    out = []
    for found in series_flags(points, thresholds):
        before, after = points[found["from_index"]], points[found["to_index"]]
        out.append({
            **found, "from_run": before["run"], "to_run": after["run"],
            "from_compilation": before["compilation"], "to_compilation": after["compilation"],
            "compare": urls.compare(before["compilation_id"], after["compilation_id"]),
            "first_effect_pass": first_effect_pass(session, before["compilation_id"], after["compilation_id"],
                                                   (keys[found["from_index"]], keys[found["to_index"]]))
            if before["_dumps"] and after["_dumps"] else None,
        })
    return out


def compatible(partial: dict[str, Any], full: dict[str, Any]) -> bool:
    """Whether a config that says less (a failed compile's: no cache metadata, so no num_warps) fits
    one that says more: every key it names has the same value there."""
    return all(key in full and str(full[key]) == str(value) for key, value in partial.items())


def _fold_failed(grouped: dict[tuple, list], order: dict[int, int]) -> None:
    """A series of failed compiles only, whose config fits exactly one other series of the target,
    joins that series: a compile that starts failing is a step of its series (flagged `status`)."""
    for key in [key for key, members in grouped.items() if all(row.status == "failed" for row in members)]:
        config = config_of(grouped[key][0])
        homes = [other for other, members in grouped.items() if other != key and other[0] == key[0]
                 and any(row.status != "failed" for row in members) and compatible(config, config_of(members[0]))]
        if len(homes) == 1:
            grouped[homes[0]] = sorted(grouped[homes[0]] + grouped.pop(key), key=lambda row: order[id(row)])


def parse_order(order: str | None) -> str | None:
    """`label:KEY` (sort by that label's value, as versions) or None (run order)."""
    if order and order.startswith("label:") and 0 < len(order) - 6 <= 40:
        return order[6:]
    return None


def kernel_history(session: Session, name: str, urls: Urls, visible: ColumnElement[bool] | None,
                   thresholds: Thresholds, order: str | None = None, limit: int = 200) -> dict[str, Any]:
    """{"name", "series": [{"target", "config", "points", "flags"}], ...}: the newest `limit` points."""
    limit = max(1, min(limit, MAX_POINTS))
    label = parse_order(order)
    counted = select(func.count()).select_from(KernelPoint).where(KernelPoint.kernel == name)
    if visible is not None:  # else an index-only count
        counted = counted.join(Run, Run.id == KernelPoint.run_id).where(visible)
    total = session.scalar(counted) or 0
    rows = session.execute(points_query(visible).where(KernelPoint.kernel == name)
                           .order_by(KernelPoint.created_at.desc(), KernelPoint.run_id.desc(),
                                     KernelPoint.compilation_pk.desc()).limit(limit)).all()
    rows.reverse()
    if label is not None:  # stable: runs with one label value stay in run order
        rows.sort(key=lambda row: version_key((row.labels or {}).get(label)))
    grouped: dict[tuple, list] = {}
    for row in rows:
        grouped.setdefault((row.target or "", row.series), []).append(row)
    _fold_failed(grouped, {id(row): n for n, row in enumerate(rows)})
    series = []
    for (target, _key), members in sorted(grouped.items(), key=lambda item: (item[0][0], -len(item[1]), item[0][1])):
        points = [point_dict(row, urls) for row in members]
        flags = flag_dicts(session, points, [row.compilation_pk for row in members], thresholds, urls)
        for point in points:
            del point["_dumps"]
        series.append({"target": target or None, "config": config_of(members[0]), "points": points, "flags": flags})
    return {"name": name, "url": urls.kernel(name), "order": f"label:{label}" if label else "run",
            "total_points": total, "shown_points": len(rows), "limit": limit, "series": series,
            "orders": {"run": urls.kernel(name), "label:triton": urls.kernel(name, "label:triton")}}


SPARK_COLUMNS = (KernelPoint.compilation_pk, KernelPoint.target, KernelPoint.series, KernelPoint.registers,
                 KernelPoint.time_ns)


def _spark(session: Session, name: str, visible: ColumnElement[bool] | None) -> tuple[int | None, list]:
    """The newest point of a kernel and the last SPARK_POINTS of its series (oldest first): no JSON
    column read, so twenty kernels cost twenty small index scans."""
    statement = select(*SPARK_COLUMNS).where(KernelPoint.kernel == name)
    if visible is not None:
        statement = statement.join(Run, Run.id == KernelPoint.run_id).where(visible)
    rows = session.execute(statement.order_by(KernelPoint.created_at.desc(), KernelPoint.run_id.desc())
                           .limit(SPARK_POINTS * 2)).all()
    if not rows:
        return None, []
    latest = rows[0]
    same = [row for row in rows if row.series == latest.series and row.target == latest.target][:SPARK_POINTS]
    return latest.compilation_pk, list(reversed(same))


_LISTS: OrderedDict[tuple, dict[str, Any]] = OrderedDict()  # (database, generation, reader, query) -> the list


def kernel_list(session: Session, urls: Urls, visible: ColumnElement[bool] | None, query: str = "",
                reader: tuple = ()) -> dict[str, Any]:
    """Every kernel the reader may see: runs, last seen, latest numbers, a sparkline of its newest
    series. It groups every point, so it is kept per worker while the history's generation stands
    (app/store/generation.py: any change to the points or to which runs are listed moves it);
    `reader` names whom `visible` lets see what (the same reader, the same runs)."""
    # the database too: two databases served by one process (tests, a second app) count generations alike
    database = session.get_bind().url.render_as_string(hide_password=True)
    key = (database, history_generation(session), reader, query, urls.base)
    if key in _LISTS:
        _LISTS.move_to_end(key)
        return {**_LISTS[key], "cached": True}
    found = _kernel_list(session, urls, visible, query)
    _LISTS[key] = found
    while len(_LISTS) > 256:
        _LISTS.popitem(last=False)
    return {**found, "cached": False}


def _kernel_list(session: Session, urls: Urls, visible: ColumnElement[bool] | None, query: str) -> dict[str, Any]:
    statement = (select(KernelPoint.kernel, func.count(func.distinct(KernelPoint.run_id)).label("runs"),
                        func.max(KernelPoint.created_at).label("last_seen"))
                 .group_by(KernelPoint.kernel).order_by(func.max(KernelPoint.created_at).desc(), KernelPoint.kernel)
                 .limit(KERNELS_SHOWN))
    if visible is not None:
        statement = statement.join(Run, Run.id == KernelPoint.run_id).where(visible)
    words = query.split()
    for word in words:
        escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        statement = statement.where(KernelPoint.kernel.ilike(f"%{escaped}%", escape="\\"))
    found = []
    for name, runs, last_seen in session.execute(statement).all():
        latest, spark = _spark(session, name, visible)
        if latest is not None:
            found.append((name, runs, last_seen, latest, spark))
    latest_rows = {row.compilation_pk: row for row in session.execute(points_query(None).where(
        KernelPoint.compilation_pk.in_([entry[3] for entry in found])))} if found else {}
    kernels = []
    for name, runs, last_seen, latest, spark in found:
        row = latest_rows[latest]
        metric = "time_ns" if any(point.time_ns for point in spark) else "registers"
        kernels.append({
            "name": name, "url": urls.kernel(name), "runs": runs, "last_seen": iso_time(last_seen),
            "latest": {**_public(point_dict(row, urls)), "target": row.target, "config": config_of(row)},
            "sparkline": {"metric": metric, "values": [getattr(point, metric) for point in spark]},
        })
    return {"q": query, "count": len(kernels), "kernels": kernels}
