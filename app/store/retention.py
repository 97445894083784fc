"""Deleting runs, and the blobs nobody uses any more; the retention schedule that does it by age.

Blobs are content-addressed and shared: two runs of the same kernel store its IR once. Deleting a run
removes its rows, then each blob it referred to that no other row refers to (snapshots, artifacts,
sources, inputs' log texts, problems' damaged dumps), with what was derived from it (map line indexes,
stored diffs). Everything is logged on the "irlens" logger.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from app.store.db import Database
from app.store.generation import bump_history
from app.store.models import (
    AdjacentDiff,
    Artifact,
    Blob,
    Compilation,
    CompilationTerm,
    Diagnostic,
    InputRecord,
    KernelPoint,
    Launch,
    LineIndex,
    LineIndexPack,
    Problem,
    Profile,
    ProfileKernel,
    Run,
    Snapshot,
    Source,
    Timing,
)

log = logging.getLogger("irlens")

RETENTION_INTERVAL_SECONDS = 3600
_deletion_listeners: list[Callable[[str], None]] = []
_CHUNK = 500  # hashes per DELETE ... IN (...): well under SQLite's and PostgreSQL's parameter limits

# Every column that refers to a blob: by hash, and by id (a pack slice keeps its pack alive).
BLOB_REFERENCES = (Artifact.blob, Source.blob, InputRecord.log_blob, Problem.blob)
_Slice = aliased(Blob)
BLOB_ID_REFERENCES = (Snapshot.blob_id, _Slice.pack_id)


@dataclass
class Deleted:
    run: str
    title: str
    blobs: int  # blobs removed because no other run used them


def _unreferenced() -> list:
    """Conditions: no row refers to the blob at hand."""
    return [*(~exists().where(column == Blob.hash) for column in BLOB_REFERENCES),
            *(~exists().where(column == Blob.id) for column in BLOB_ID_REFERENCES)]


def run_blobs(session: Session, run_id: str) -> set[str]:
    """Every blob a run's rows refer to."""
    compilations = select(Compilation.pk).where(Compilation.run_id == run_id)
    queries = (
        select(Snapshot.blob).where(Snapshot.compilation_pk.in_(compilations)),
        select(Artifact.blob).where(Artifact.compilation_pk.in_(compilations), Artifact.blob.is_not(None)),
        select(Source.blob).where(Source.run_id == run_id),
        select(InputRecord.log_blob).where(InputRecord.run_id == run_id, InputRecord.log_blob.is_not(None)),
        select(Problem.blob).where(Problem.run_id == run_id, Problem.blob.is_not(None)),
    )
    hashes: set[str] = set()
    for query in queries:
        hashes.update(session.scalars(query.distinct()))
    return hashes


def _delete_rows(session: Session, run_id: str) -> None:
    """A run's rows, children first (so it works with or without ON DELETE CASCADE)."""
    compilations = select(Compilation.pk).where(Compilation.run_id == run_id).scalar_subquery()
    profiles = select(Profile.pk).where(Profile.run_id == run_id).scalar_subquery()
    session.execute(delete(ProfileKernel).where(ProfileKernel.profile_pk.in_(profiles)))
    session.execute(delete(Profile).where(Profile.run_id == run_id))
    session.execute(delete(KernelPoint).where(KernelPoint.run_id == run_id))
    bump_history(session)
    for model in (Snapshot, Artifact, Timing, Launch, CompilationTerm):
        session.execute(delete(model).where(model.compilation_pk.in_(compilations)))
    for model in (Diagnostic, Compilation, Source, InputRecord, Problem):
        session.execute(delete(model).where(model.run_id == run_id))
    session.execute(delete(Run).where(Run.id == run_id))


def collect_blobs(session: Session, candidates: Iterable[str]) -> int:
    """Delete those of `candidates` that no row refers to, with their map line indexes. Returns how
    many went."""
    hashes = sorted(set(candidates))
    removed = 0
    index_packs: set[int] = set()
    while hashes:
        packs: set[str] = set()
        for start in range(0, len(hashes), _CHUNK):
            chunk = hashes[start : start + _CHUNK]
            packs.update(session.scalars(select(Blob.pack).where(Blob.hash.in_(chunk), Blob.pack_id.is_not(None))))
            # A reference stored meanwhile makes the foreign keys refuse the DELETE (delete_run retries).
            unused = session.scalars(select(Blob.id).where(Blob.hash.in_(chunk), *_unreferenced())).all()
            if unused:
                index_packs.update(session.scalars(select(LineIndex.pack).where(
                    LineIndex.blob_id.in_(unused), LineIndex.pack.is_not(None)).distinct()))
                session.execute(delete(LineIndex).where(LineIndex.blob_id.in_(unused)))
                removed += session.execute(delete(Blob).where(Blob.id.in_(unused))).rowcount or 0
        # Removing a pack's last slices frees the pack itself: one more round for those.
        hashes = sorted(packs)
    if index_packs:  # line index packs no row points into any more
        ordered = sorted(index_packs)
        for start in range(0, len(ordered), _CHUNK):
            chunk = ordered[start : start + _CHUNK]
            session.execute(delete(LineIndexPack).where(LineIndexPack.pk.in_(chunk), LineIndexPack.pk.not_in(
                select(LineIndex.pack).where(LineIndex.pack.in_(chunk)))))
    if removed:  # stored diffs of texts that are gone (a few hundred small rows at most)
        session.execute(
            delete(AdjacentDiff).where(
                ~exists().where(Blob.hash == AdjacentDiff.a_blob) | ~exists().where(Blob.hash == AdjacentDiff.b_blob)
            )
        )
    return removed


def collect_all_blobs(session: Session) -> int:
    """Delete every blob no row refers to (`irlens gc`: also catches leftovers of interrupted deletes)."""
    return collect_blobs(session, list(session.scalars(select(Blob.hash).where(*_unreferenced()))))


def delete_run(db: Database, run_id: str, reason: str = "deleted") -> Deleted | None:
    """Delete one run and the blobs only it used, in one transaction. None if there is no such run.

    An ingest running at the same moment may start using one of those blobs; the database's foreign
    keys then refuse the blob deletion, and we try again (the blob is kept).
    """
    for attempt in range(3):
        with db.session() as session:
            run = session.get(Run, run_id)
            if run is None:
                return None
            title = run.title
            candidates = run_blobs(session, run_id)
            session.expunge(run)
            _delete_rows(session, run_id)
            try:
                removed = collect_blobs(session, candidates)
                session.commit()
                for listener in _deletion_listeners:
                    listener(run_id)
            except IntegrityError:
                session.rollback()
                if attempt == 2:
                    raise
                continue
        log.info(
            "%s run %s (%r): %d of its %d blobs were not used elsewhere and were removed",
            reason,
            run_id,
            title,
            removed,
            len(candidates),
        )
        return Deleted(run_id, title, removed)
    return None


def on_run_deleted(listener: Callable[[str], None]) -> None:
    """Call ``listener(run_id)`` after each run deletion commits (the web's page cache forgets the
    run's pages); the store itself knows nothing of the layers above it."""
    _deletion_listeners.append(listener)


def expired_runs(session: Session, days: float, now: datetime | None = None) -> list[str]:
    cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
    return list(session.scalars(select(Run.id).where(Run.created_at < cutoff).order_by(Run.created_at)))


def apply_retention(db: Database, days: float, now: datetime | None = None) -> list[Deleted]:
    """Delete every run created more than `days` days ago, one transaction per run."""
    with db.session() as session:
        run_ids = expired_runs(session, days, now)
    deleted = [
        result for run_id in run_ids if (result := delete_run(db, run_id, f"retention ({days:g} days):"))
    ]
    if deleted:
        log.info("retention: deleted %d runs older than %g days", len(deleted), days)
    return deleted


async def retention_loop(db: Database, days: float, interval: float = RETENTION_INTERVAL_SECONDS) -> None:
    """The schedule started in the app's lifespan: now, then every `interval` seconds, until cancelled."""
    from starlette.concurrency import run_in_threadpool

    log.info("retention: runs older than %g days are deleted, checked every %g s", days, interval)
    while True:
        try:
            await run_in_threadpool(apply_retention, db, days)
        except Exception:  # keep the schedule alive; the next round tries again
            log.exception("retention: a round failed")
        await asyncio.sleep(interval)


def start_retention(db: Database, days: float | None) -> asyncio.Task | None:
    """Start the retention schedule when `retention_days` is set (call from the app's lifespan)."""
    if not days or days <= 0:
        return None
    return asyncio.create_task(retention_loop(db, days), name="irlens-retention")
