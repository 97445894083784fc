"""`irlens check`: a stored run's kernels against a baseline, flagged as the history flags steps
(app/insight/kernel_flags.py). Each kernel of the run (name, target, config) is compared with the
same kernel, target and config in the baseline: a named run, the latest run carrying a label
(`label:branch=main`), or by default the latest earlier run holding that kernel. Only runs the
reader may list are baselines, as search sees them (a run named by its id is readable by link)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app.insight.kernel_flags import METRICS, Thresholds
from app.insight.kernel_history import _visible, compatible, config_of, flag_dicts, point_dict, points_query
from app.insight.run_search import label_condition
from app.store.models import KernelPoint, Run
from app.urls import Urls


class CheckError(ValueError):
    """A baseline or option that names nothing: a usage error (exit status 2)."""


def parse_fail_on(text: str | None) -> list[str]:
    if not text:
        return list(METRICS)
    kinds = [kind.strip() for kind in text.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in METRICS]
    if unknown or not kinds:
        raise CheckError(f"--fail-on takes {','.join(METRICS)}; not {', '.join(unknown) or 'nothing'}")
    return kinds


def _key(row: Any) -> tuple[str, str, str]:
    return (row.kernel, row.target or "", row.series)


def _described(row: Any) -> dict[str, Any]:
    return {"kernel": row.kernel, "target": row.target, "config": config_of(row)}


def _failing_partner(session: Session, statement, row: Any) -> Any | None:
    """For a point without a baseline of its own series: the newest baseline point of the same kernel
    and target whose config fits it, where one of the two failed to compile (app/insight/kernel_history.py
    folds such series the same way)."""
    mine = config_of(row)
    for other in session.execute(statement.order_by(KernelPoint.created_at.desc(), KernelPoint.run_id.desc())
                                 .limit(200)).all():
        theirs = config_of(other)
        if row.status == "failed" and other.status != "failed" and compatible(mine, theirs):
            return other
        if row.status != "failed" and other.status == "failed" and compatible(theirs, mine):
            return other
    return None


def check_run(session: Session, run_id: str, urls: Urls, visible: ColumnElement[bool] | None,
              thresholds: Thresholds, baseline: str | None = None, fail_on: list[str] | None = None) -> dict[str, Any]:
    run = session.get(Run, run_id)
    if run is None:
        raise CheckError(f"no run {run_id}")
    fail_on = list(METRICS) if fail_on is None else fail_on
    columns = (KernelPoint.kernel,)
    query = points_query(None).add_columns(*columns)
    mine = session.execute(query.where(KernelPoint.run_id == run.id).order_by(KernelPoint.compilation_pk)).all()
    spec = baseline or "previous"
    named_run: Run | None = None
    condition = None
    if baseline and baseline.startswith("label:"):
        if "=" not in baseline:
            raise CheckError(f"a label baseline is label:KEY=VALUE, not {baseline!r}")
        condition = label_condition(baseline[len("label:"):])
    elif baseline:
        named_run = session.get(Run, baseline)
        if named_run is None:
            raise CheckError(f"no baseline run {baseline}")
    regressions, improvements, new_kernels = [], [], []
    matched: set[tuple] = set()
    used: dict[str, Run | None] = {}
    for row in mine:
        statement = query.where(KernelPoint.kernel == row.kernel, KernelPoint.run_id != run.id)
        statement = statement.where(KernelPoint.target == row.target) if row.target is not None \
            else statement.where(KernelPoint.target.is_(None))
        if named_run is not None:
            statement = statement.where(KernelPoint.run_id == named_run.id)
        else:
            statement = statement.where(_visible(visible))
            if condition is not None:
                statement = statement.where(condition)
            else:
                statement = statement.where(KernelPoint.created_at <= run.created_at)
        before = session.execute(statement.where(KernelPoint.series == row.series)
                                 .order_by(KernelPoint.created_at.desc(), KernelPoint.run_id.desc()).limit(1)).first()
        if before is None:  # a compile that starts (or stops) failing says less of its config
            before = _failing_partner(session, statement, row)
        if before is None:
            new_kernels.append({**_described(row), "compilation": urls.compilation(row.run_id, row.ordinal)})
            continue
        used.setdefault(before.run_id, None)
        matched.add(_key(before))
        points = [point_dict(before, urls), point_dict(row, urls)]  # flag_dicts reads their "_dumps"
        for flag in flag_dicts(session, points, [before.compilation_pk, row.compilation_pk], thresholds, urls):
            flag = {**_described(row), **flag, "fails": flag["direction"] == "worse" and flag["metric"] in fail_on}
            flag.pop("from_index"), flag.pop("to_index")
            (regressions if flag["direction"] == "worse" else improvements).append(flag)
    baseline_runs = list(used) or ([named_run.id] if named_run is not None else [])
    if not baseline_runs and condition is not None:
        latest = session.scalar(select(Run.id).where(condition, _visible(visible), Run.id != run.id)
                                .order_by(Run.created_at.desc()).limit(1))
        baseline_runs = [latest] if latest else []
    mine_keys = {_key(row) for row in mine}
    missing: dict[tuple, dict] = {}
    if baseline_runs:
        for row in session.execute(query.where(KernelPoint.run_id.in_(baseline_runs))).all():
            if _key(row) not in mine_keys and _key(row) not in matched:
                missing.setdefault(_key(row), {**_described(row), "run": row.run_id,
                                               "compilation": urls.compilation(row.run_id, row.ordinal)})
    failed = any(flag["fails"] for flag in regressions)
    return {
        "run": run.id, "run_url": urls.run(run.id), "labels": run.labels or {},
        "baseline": {"spec": spec, "runs": [{"run": rid, "url": urls.run(rid)} for rid in baseline_runs]},
        "fail_on": fail_on, "failed": failed, "exit_code": 1 if failed else 0,
        "regressions": regressions, "improvements": improvements,
        "new_kernels": new_kernels, "missing_kernels": list(missing.values()),
        "kernels_checked": len(mine),
    }


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 100 else f"{value:.3g}"
    return str(value)


def _config_text(config: dict) -> str:
    return " ".join(f"{key}={value}" for key, value in config.items())


def markdown(result: dict[str, Any], server: str = "") -> str:
    """The check as a PR comment: a verdict line, then one table row per flag with its links."""
    def link(url: str | None, text: str) -> str:
        return f"[{text}]({server}{url})" if url else text

    lines = []
    verdict = "❌ regressions" if result["failed"] else "✅ no failing regressions"
    runs = ", ".join(link(entry["url"], entry["run"][:8]) for entry in result["baseline"]["runs"]) or "none"
    lines.append(f"**irlens check: {verdict}** — run {link(result['run_url'], result['run'][:8])} "
                 f"against {result['baseline']['spec']} ({runs}); {result['kernels_checked']} kernels checked")
    lines.append("")
    for title, flags in (("Regressions", result["regressions"]), ("Improvements", result["improvements"])):
        if not flags:
            continue
        lines += [f"#### {title} ({len(flags)})", "",
                  "| kernel | target | config | metric | before | after | compare | first pass whose effect differs |",
                  "|---|---|---|---|---:|---:|---|---|"]
        for flag in flags:
            mark = " ❌" if flag.get("fails") else ""
            lines.append(
                f"| `{flag['kernel']}` | {flag['target'] or '—'} | {_config_text(flag['config'])} | "
                f"{flag['metric']}{mark} {flag['detail']} | {_number(flag['before'])} | {_number(flag['after'])} | "
                f"{link(flag['compare'], 'compare')} | {flag['first_effect_pass'] or '—'} |")
        lines.append("")
    for title, entries in (("New kernels", result["new_kernels"]), ("Missing kernels", result["missing_kernels"])):
        if entries:
            names = ", ".join(f"{link(entry['compilation'], entry['kernel'])} ({_config_text(entry['config'])})"
                              for entry in entries)
            lines += [f"**{title}** ({len(entries)}): {names}", ""]
    return "\n".join(lines).rstrip() + "\n"
