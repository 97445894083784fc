"""`replay`: every pass of a compilation (a `Source`: stored, or read from a server's JSON) re-run on
its dump by a worker holding the capture's Triton, each result compared with the dump after the pass.

Statuses: `same` (the result equals the next dump up to what `compare` ignores), `differs` (it does
not: the changed lines come with it), `not-replayable` (no binding adds the pass alone, or no dump
follows it; the reason says which), `error` (the pass failed, or the worker died or overran its limits).
A failed compile's failing pass is `error` too, with whether the replay's error is the logged one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.render.cache import blob_reader
from app.replay.compare import _IGNORED_NAMES, compare, texts_differ
from app.replay.plan import Dump, Step, banner_options, plan_steps
from app.replay.runner import Limits, ReplayFailed, Worker
from app.store.models import Compilation, Diagnostic, Snapshot
from app.urls import compilation_id

SAME, DIFFERS, NOT_REPLAYABLE, ERROR = "same", "differs", "not-replayable", "error"
STATUSES = (SAME, DIFFERS, NOT_REPLAYABLE, ERROR)


@dataclass
class Source:
    """A compilation as replay reads it, from the database (`store_source`) or a server's JSON
    (app/replay/remote.py)."""

    compilation: str  # RUN-N
    triton_version: str | None
    target: str | None
    metadata: dict | None
    options: dict  # num_warps, num_stages, num_ctas as stored
    status: str
    logged_error: str | None  # a failed compile's first error, as the log shows it
    dumps: list[Dump]
    text: Callable[[int], str]  # a dump's text by index


def store_source(session: Session, compilation: Compilation) -> Source:
    snapshots = session.scalars(select(Snapshot).where(Snapshot.compilation_pk == compilation.pk)
                                .order_by(Snapshot.index)).all()
    hashes = {s.index: s.blob for s in snapshots}
    dumps = [Dump(s.index, s.kind, s.when, s.pass_name, s.pass_arg, s.pass_options, s.scope, s.failed)
             for s in snapshots]
    return Source(compilation_id(compilation.run_id, compilation.ordinal), compilation.triton_version,
                  compilation.target, compilation.metadata_json,
                  {key: getattr(compilation, key) for key in ("num_warps", "num_stages", "num_ctas")},
                  compilation.status, logged_error(session, compilation), dumps,
                  lambda index: blob_reader.text(session, hashes[index]) or "")


def language_of(dumps: list[Dump]) -> str:
    """Gluon kernels start at `gluon-inline` (Triton ones at the inliner)."""
    first = next((d for d in dumps if d.kind == "mlir"), None)
    return "gluon" if first is not None and first.pass_arg == "gluon-inline" else "triton"


def capture_version(source: Source) -> str | None:
    return source.triton_version or (source.metadata or {}).get("triton_version")


def plan_request(source: Source) -> dict:
    """The backend's options: the cache metadata's, else the stored warps/stages/CTAs, else what the
    banners' pass options say (a log without its cache)."""
    metadata = source.metadata or {}
    options = {key: value for key, value in metadata.items() if not isinstance(value, dict)}
    for key, value in source.options.items():
        if value is not None:
            options.setdefault(key, value)
    from_banners = banner_options(source.dumps)
    for key, value in from_banners.items():
        options.setdefault(key, value)
    target = source.target or from_banners.get("target") or ""
    return {"op": "plan", "target": str(target), "options": options,
            "warp_size": (metadata.get("target") or {}).get("warp_size") or from_banners.get("threads_per_warp"),
            "language": language_of(source.dumps)}


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
    started = time.perf_counter()
    changed = None if after is None or before is None else texts_differ(before, after)
    return {
        "index": step.dump.index, "after": step.after, "pass": step.dump.pass_name,
        "pipeline": call.get("pipeline") or None, "binding": call.get("binding"),
        "args": call.get("args"), "changed": changed,
        "status": NOT_REPLAYABLE if step.call is None or step.after is None else None,
        "reason": step.reason, "diff": [], "seconds": {"changed": time.perf_counter() - started},
    }


def best_interpreter(source: Source, pythons: list[str], limits: Limits | None = None) -> tuple[str | None, str]:
    """For a capture that names no Triton version: the interpreter whose backend's pass list pairs with
    the most of its dumps (each tried: one process start and one dry run)."""
    scores = []
    for python in dict.fromkeys(pythons):
        try:
            with Worker(python, limits or Limits()) as worker:
                answer = worker.ask(plan_request(source))
        except ReplayFailed:
            continue
        steps = plan_steps(source.dumps, answer.get("passes") or [])
        scores.append((sum(step.call is not None for step in steps), worker.ready.get("triton"), python))
    if not scores:
        return None, "no interpreter could record a pass list"
    _, version, python = max(scores)
    tried = ", ".join(f"{v}: {m}" for m, v, _ in scores)
    return python, f"the capture names no Triton version; Triton {version}'s pass list pairs with most dumps ({tried})"


def replay(source: Source, python: str, limits: Limits | None = None, only: int | None = None) -> dict:
    """The replay report of one compilation (`only`: of the pass whose dump is /s/ONLY)."""
    report = {"compilation": source.compilation,
              "triton": {"capture": capture_version(source), "replayed_with": None, "python": python},
              "ignored": [label for _, label in _IGNORED_NAMES], "passes": [], "summary": _summary([]),
              "seconds": {}}
    try:
        worker = Worker(python, limits or Limits())
        ready = worker.start()
    except ReplayFailed as error:
        report["error"] = str(error)
        return report
    with worker:
        report["triton"]["replayed_with"] = ready.get("triton")
        report["seconds"]["process_start"] = worker.start_seconds
        report["seconds"]["import_triton"] = ready.get("import_seconds")
        started = time.perf_counter()
        request = plan_request(source)
        try:
            plan_answer = worker.ask(request)
        except ReplayFailed as error:
            plan_answer = {"error": str(error)}
        report["seconds"]["plan"] = time.perf_counter() - started
        if "passes" not in plan_answer:
            report["error"] = f"the backend's pass list could not be recorded: {plan_answer.get('error')}"
            return report
        plan = plan_answer["passes"]
        steps = [s for s in plan_steps(source.dumps, plan) if only is None or s.dump.index == only]
        needed = {i for s in steps for i in (s.dump.index, s.after) if i is not None}
        texts = {i: source.text(i) for i in sorted(needed)}
        replay_started = time.perf_counter()
        for step in steps:
            entry = _entry(step, plan, texts)
            report["passes"].append(entry)
            if entry["status"] is None:
                _run(worker, request, step, entry, texts, source, plan)
        report["seconds"]["passes"] = time.perf_counter() - replay_started
    report["summary"] = _summary(report["passes"])
    return report


def _run(worker: Worker, request: dict, step: Step, entry: dict, texts: dict[int, str], source: Source,
         plan: list[dict]) -> None:
    after_dump = next(d for d in source.dumps if d.index == step.after)
    failed_at = source.logged_error
    passes = [step.call, *step.undumped]
    if step.undumped:
        entry["undumped"] = [plan[i].get("pipeline") or plan[i].get("pass_arg") or plan[i]["binding"] for i in step.undumped]
    try:
        answer = worker.ask({"op": "run", "passes": passes, "module": texts[step.dump.index]})
        if step.undumped and answer.get("module") is not None and not compare(answer["module"], texts[step.after]).same:
            alone = worker.ask({"op": "run", "passes": [step.call], "module": texts[step.dump.index]})
            if alone.get("module") is not None and compare(alone["module"], texts[step.after]).same:
                answer, entry["undumped"] = alone, []  # they did not run in the capture's compile
    except ReplayFailed as error:
        entry.update(status=ERROR, reason=str(error))
        try:  # the next pass gets a fresh worker, with the same plan
            worker.close()
            worker.start()
            worker.ask(request)
        except ReplayFailed:
            pass
        return
    entry["seconds"] = {**entry["seconds"], **(answer.get("seconds") or {})}
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
    started = time.perf_counter()
    result = compare(answer["module"], texts[step.after])
    entry["seconds"] = {**(entry["seconds"] or {}), "compare": time.perf_counter() - started}
    entry["status"] = SAME if result.same else DIFFERS
    if result.same:
        entry["reason"] = ("identical text" if not result.ignored
                           else f"equal to /s/{step.after} ignoring {', '.join(result.ignored)}")
    else:
        entry["reason"] = f"{result.stats.get('changes', 0)} changes against /s/{step.after} (- stored, + replay)"
        entry["diff"] = result.diff
    if entry.get("undumped"):
        entry["reason"] += f"; run with the passes after it that printed no dump: {', '.join(entry['undumped'])}"


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
