"""`replay_compilation`: every pass of a stored compilation re-run on its dump by a worker holding the
capture's Triton, each result compared with the stored dump after the pass.

Statuses: `same` (the result equals the next dump up to what `compare` ignores), `differs` (it does
not: the changed lines come with it), `not-replayable` (no binding adds the pass alone, or no dump
follows it; the reason says which), `error` (the pass failed, or the worker died or overran its limits).
A failed compile's failing pass is `error` too, with whether the replay's error is the logged one.
"""

from __future__ import annotations

import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.render.cache import blob_reader
from app.replay.compare import _IGNORED_NAMES, compare, texts_differ
from app.replay.plan import Dump, Step, plan_steps
from app.replay.runner import Limits, ReplayFailed, Worker
from app.store.models import Compilation, Diagnostic, Snapshot
from app.urls import compilation_id

SAME, DIFFERS, NOT_REPLAYABLE, ERROR = "same", "differs", "not-replayable", "error"
STATUSES = (SAME, DIFFERS, NOT_REPLAYABLE, ERROR)


def stored_dumps(session: Session, compilation: Compilation) -> list[tuple[Dump, str]]:
    """(Dump, blob hash) of each snapshot, in order."""
    snapshots = session.scalars(select(Snapshot).where(Snapshot.compilation_pk == compilation.pk)
                                .order_by(Snapshot.index)).all()
    return [(Dump(s.index, s.kind, s.when, s.pass_name, s.pass_arg, s.pass_options, s.scope, s.failed), s.blob)
            for s in snapshots]


def language_of(dumps: list[Dump]) -> str:
    """Gluon kernels start at `gluon-inline` (Triton ones at the inliner)."""
    first = next((d for d in dumps if d.kind == "mlir"), None)
    return "gluon" if first is not None and first.pass_arg == "gluon-inline" else "triton"


def plan_request(compilation: Compilation, dumps: list[Dump]) -> dict:
    metadata = compilation.metadata_json or {}
    options = {key: value for key, value in metadata.items() if not isinstance(value, dict)}
    for key in ("num_warps", "num_stages", "num_ctas"):
        if getattr(compilation, key) is not None:
            options.setdefault(key, getattr(compilation, key))
    return {"op": "plan", "target": compilation.target or "", "options": options,
            "warp_size": (metadata.get("target") or {}).get("warp_size"), "language": language_of(dumps)}


def logged_error(session: Session, compilation: Compilation) -> str | None:
    """The error the log shows for a failed compile: its first error diagnostic, else its reason."""
    if compilation.status != "failed":
        return None
    message = session.scalar(select(Diagnostic.message).where(
        Diagnostic.compilation_pk == compilation.pk, Diagnostic.severity == "error").order_by(Diagnostic.pk).limit(1))
    return message or compilation.status_reason


def _entry(step: Step, plan: list[dict], texts: dict[int, str]) -> dict:
    call = plan[step.call] if step.call is not None else {}
    before, after = texts.get(step.dump.index), texts.get(step.after) if step.after is not None else None
    return {
        "index": step.dump.index, "after": step.after, "pass": step.dump.pass_name,
        "pipeline": call.get("pipeline") or None, "binding": call.get("binding"),
        "args": call.get("args"), "changed": None if after is None or before is None else texts_differ(before, after),
        "status": NOT_REPLAYABLE if step.call is None or step.after is None else None,
        "reason": step.reason, "diff": [],
    }


def replay_compilation(session: Session, compilation: Compilation, python: str, limits: Limits = Limits(),
                       only: int | None = None, texts_override: dict[int, str] | None = None) -> dict:
    """The replay report of one compilation (`only`: of the pass whose dump is /s/ONLY). `texts_override`
    replaces stored dumps by index (a tampered dump, in tests and the bench)."""
    listed = stored_dumps(session, compilation)
    dumps = [dump for dump, _ in listed]
    hashes = {dump.index: digest for dump, digest in listed}
    report = {"compilation": compilation_id(compilation.run_id, compilation.ordinal),
              "triton": {"capture": compilation.triton_version, "replayed_with": None, "python": python},
              "ignored": [label for _, label in _IGNORED_NAMES], "passes": [], "summary": {},
              "seconds": {}}
    failed_at = logged_error(session, compilation)
    try:
        worker = Worker(python, limits)
        ready = worker.start()
    except ReplayFailed as error:
        report["error"] = str(error)
        report["summary"] = _summary([])
        return report
    with worker:
        report["triton"]["replayed_with"] = ready.get("triton")
        report["seconds"]["process_start"] = worker.start_seconds
        report["seconds"]["import_triton"] = ready.get("import_seconds")
        started = time.perf_counter()
        plan_answer = worker.ask(plan_request(compilation, dumps))
        report["seconds"]["plan"] = time.perf_counter() - started
        if "passes" not in plan_answer:
            report["error"] = f"the backend's pass list could not be recorded: {plan_answer.get('error')}"
            report["summary"] = _summary([])
            return report
        plan = plan_answer["passes"]
        steps = [s for s in plan_steps(dumps, plan) if only is None or s.dump.index == only]
        needed = {i for s in steps for i in (s.dump.index, s.after) if i is not None}
        texts = {i: (texts_override or {}).get(i) or blob_reader.text(session, hashes[i]) for i in needed}
        replay_started = time.perf_counter()
        for step in steps:
            entry = _entry(step, plan, texts)
            report["passes"].append(entry)
            if entry["status"] is None:
                _run(worker, step, entry, texts, failed_at, dumps)
        report["seconds"]["passes"] = time.perf_counter() - replay_started
    report["summary"] = _summary(report["passes"])
    return report


def _run(worker: Worker, step: Step, entry: dict, texts: dict[int, str], failed_at: str | None,
         dumps: list[Dump]) -> None:
    after_dump = next(d for d in dumps if d.index == step.after)
    try:
        answer = worker.ask({"op": "run", "pass": step.call, "module": texts[step.dump.index]})
    except ReplayFailed as error:
        if worker.process is None or worker.process.poll() is not None:
            worker.start()  # the next pass gets a fresh worker (its plan is asked again)
        entry.update(status=ERROR, reason=str(error))
        return
    entry["seconds"] = answer.get("seconds")
    if answer.get("error") or answer.get("module") is None:
        message = _first_error(answer.get("diagnostics") or "") or answer.get("error") or "no module came back"
        entry.update(status=ERROR, reason=message, diagnostics=(answer.get("diagnostics") or "")[-4000:])
        if after_dump.failed:
            entry["logged_error"] = failed_at
            entry["reproduced"] = bool(failed_at) and _same_error(message, failed_at)
        return
    if after_dump.failed:
        entry.update(status=DIFFERS, reason="the capture failed in this pass; the replay succeeded",
                     logged_error=failed_at, reproduced=False)
        return
    result = compare(answer["module"], texts[step.after])
    entry["status"] = SAME if result.same else DIFFERS
    if result.same:
        entry["reason"] = ("identical text" if not result.ignored
                           else "equal to /s/%d ignoring %s" % (step.after, ", ".join(result.ignored)))
    else:
        entry["reason"] = f"{result.stats.get('changes', 0)} changes against /s/{step.after} (- stored, + replay)"
        entry["diff"] = result.diff


def _first_error(diagnostics: str) -> str | None:
    for line in diagnostics.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    return None


def _same_error(replayed: str, logged: str) -> bool:
    return replayed.strip() in logged or logged.strip() in replayed


def _summary(passes: list[dict]) -> dict:
    counts = {status: sum(p["status"] == status for p in passes) for status in STATUSES}
    changed = [p for p in passes if p.get("changed")]
    counts["passes"] = len(passes)
    counts["changed"] = len(changed)
    counts["changed_same"] = sum(p["status"] == SAME for p in changed)
    return counts
