"""What the web pages ask of replay: a snapshot's reproducers, a failed compile's failing pass, and one
pass re-run on the server where it holds a matching Triton (`replay_pythons`, or its own `triton`).

A re-run is a separate process with the settings' time and memory limits (app/replay/runner.py). At
most `MAX_RUNNING` run at once per server process; a request past that is answered "busy" at once
rather than queued, so a burst of requests cannot stack processes. Results are kept by the two dumps'
hashes and the interpreter: a pass replays the same way every time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.replay.replay import (
    best_interpreter,
    capture_version,
    language_of,
    plan_request,
    replay,
    store_source,
)
from app.replay.reproducers import PassSpec
from app.replay.runner import Limits, ReplayFailed, Worker, choose_python, parse_pythons
from app.settings import Settings
from app.store.models import Compilation, Snapshot
from app.urls import compilation_id

MAX_RUNNING = 2
_running = threading.BoundedSemaphore(MAX_RUNNING)
_lock = threading.Lock()
_results: OrderedDict[tuple, dict] = OrderedDict()
_plans: OrderedDict[tuple, list] = OrderedDict()
_KEEP = 256


def _remember(store: OrderedDict, key: tuple, value) -> None:
    with _lock:
        store[key] = value
        store.move_to_end(key)
        while len(store) > _KEEP:
            store.popitem(last=False)


_guessed: OrderedDict[tuple, tuple[str | None, str]] = OrderedDict()


def interpreter(settings: Settings, compilation: Compilation, session: Session | None = None) -> tuple[str | None, str]:
    """The interpreter to replay with. A capture that names no Triton version (a log without its cache)
    replays with the configured one whose backend's pass list pairs with the most of its dumps."""
    version = compilation.triton_version or (compilation.metadata_json or {}).get("triton_version")
    if version is not None:
        return choose_python(version, None, settings.replay_pythons)
    candidates = list(parse_pythons(settings.replay_pythons).values())
    if not candidates or session is None:
        return None, "the capture names no Triton version and no interpreter is configured (replay_pythons)"
    key = (compilation.pk, settings.replay_pythons)
    if key not in _guessed:
        if not _running.acquire(blocking=False):  # trying each interpreter starts processes too
            return None, f"{MAX_RUNNING} replays are running on this server: try again shortly"
        try:
            _remember(_guessed, key, best_interpreter(store_source(session, compilation), candidates, limits(settings)))
        finally:
            _running.release()
    return _guessed[key]


def limits(settings: Settings) -> Limits:
    return Limits(seconds=settings.replay_timeout_seconds, memory_mb=settings.replay_memory_mb)


def plan_of(session: Session, compilation: Compilation, settings: Settings) -> list | None:
    """The backend's pass list for this compilation, where the server holds its Triton (else None)."""
    python, _ = interpreter(settings, compilation, session)
    if python is None:
        return None
    source = store_source(session, compilation)
    request = plan_request(source)
    key = (python, repr(sorted(request.items(), key=str)))
    if key in _plans:
        return _plans[key]
    if not _running.acquire(blocking=False):
        return None
    try:
        with Worker(python, limits(settings)) as worker:
            passes = worker.ask(request).get("passes")
    except ReplayFailed:
        passes = None
    finally:
        _running.release()
    if passes is not None:
        _remember(_plans, key, passes)
    return passes


def pass_spec(compilation: Compilation, snapshot: Snapshot, call: dict | None = None,
              dumps_language: str = "triton") -> PassSpec:
    return PassSpec(
        compilation_id(compilation.run_id, compilation.ordinal), snapshot.index, snapshot.pass_name,
        snapshot.pass_arg, snapshot.pass_options, snapshot.scope,
        compilation.triton_version or (compilation.metadata_json or {}).get("triton_version"),
        compilation.target, compilation.metadata_json,
        binding=(call or {}).get("binding"), args=tuple((call or {}).get("args") or ()) if call else None,
        language=dumps_language,
    )


def spec_for(session: Session, compilation: Compilation, snapshot: Snapshot, settings: Settings) -> PassSpec:
    """The snapshot's pass, with the binding that adds it where the server can record the plan."""
    from app.replay.plan import plan_steps

    source = store_source(session, compilation)
    language = language_of(source.dumps)
    plan = plan_of(session, compilation, settings)
    call = None
    if plan:
        step = next((s for s in plan_steps(source.dumps, plan) if s.dump.index == snapshot.index), None)
        call = plan[step.call] if step is not None and step.call is not None else None
    return pass_spec(compilation, snapshot, call, language)


def failing_pass(session: Session, compilation: Compilation) -> Snapshot | None:
    """A failed compile's failing pass: the last dump before its "IR Dump After X Failed" one."""
    if compilation.status != "failed":
        return None
    snapshots = session.scalars(select(Snapshot).where(Snapshot.compilation_pk == compilation.pk)
                                .order_by(Snapshot.index)).all()
    failed = next((s for s in snapshots if s.failed), None)
    if failed is None:
        return None
    before = [s for s in snapshots if s.index < failed.index and s.kind == "mlir" and s.when == "before"
              and s.pass_name == failed.pass_name]
    return before[-1] if before else None


def replay_one(session: Session, compilation: Compilation, snapshot: Snapshot, settings: Settings) -> dict:
    """The pass at `snapshot` re-run: its report entry, or why it was not run."""
    python, why = interpreter(settings, compilation, session)
    version = capture_version(store_source(session, compilation))
    if python is None:
        return {"status": "not-run", "reason": why, "triton": {"capture": version}}
    key = (python, compilation.pk, snapshot.index, snapshot.blob)
    if key in _results:
        return _results[key]
    if not _running.acquire(blocking=False):
        return {"status": "busy", "reason": f"{MAX_RUNNING} replays are running on this server: try again shortly",
                "triton": {"capture": version}}
    try:
        report = replay(store_source(session, compilation), python, limits(settings), only=snapshot.index)
    finally:
        _running.release()
    entry = report["passes"][0] if report["passes"] else {
        "status": "error" if report.get("error") else "not-replayable",
        "reason": report.get("error") or "not a pass's dump (an internal or LLVM dump)", "diff": []}
    result = {**entry, "triton": {**report["triton"], "why": why}, "ignored": report["ignored"],
              "seconds": report["seconds"]}
    _remember(_results, key, result)
    return result
