"""Prepares the map pages' Python-line indexes (app/insight/line_index.py) in the background, so a map
page's first visit reads small stored rows instead of every IR text of a compilation; then the
run's large adjacent diffs (app/insight/adjacent_diffs.py), so their first visit needs no alignment, and
what each compilation's IR says of its config (app/insight/kernel_config.py), so a run page links its
autotune choices without reading IR texts.

Not at ingest: indexing re-reads every stored text, which would double an ingest's CPU time. The
server instead indexes each run once it is stored (an upload wakes it; runs ingested from the
command line, or before this existed, are found on its next round). A map visited before its run
is indexed computes what it needs on the spot and stores it (line_index.indexes_for).

Each round then compacts the texts stored since the last one (app/store/compaction.py). All of it
gives way to page requests between small units of work (app/foreground.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading

from sqlalchemy import select

from app import foreground
from app.insight import adjacent_diffs, kernel_config, line_index
from app.insight.kernel_points import ensure_points
from app.store import compaction, recompress
from app.store.db import Database
from app.store.models import Run

log = logging.getLogger("irlens")
MARK = "line_index"  # in Run.stats once the run's map indexes are stored
MARKS = (MARK, adjacent_diffs.MARK)  # a run is prepared once both are there
IDLE_SECONDS = 30.0
_FACTS_CHUNK = 16  # compilations whose IR facts are read between two commits
_wake = threading.Event()


def wake() -> None:
    """A run was just stored: index it now rather than at the next round."""
    _wake.set()


def pending_runs(db: Database) -> list[str]:
    with db.session() as session:
        rows = session.execute(select(Run.id, Run.stats).order_by(Run.created_at.desc()))
        return [run_id for run_id, stats in rows if not all((stats or {}).get(mark) for mark in MARKS)]


def prepare_run(db: Database, run_id: str) -> None:
    with db.session() as session:
        if session.get(Run, run_id) is None:  # deleted meanwhile
            return
        line_index.index_run(session, run_id)  # rows a concurrent visit stored first are kept
        session.commit()
    with db.session() as session:  # what each compilation's IR says of its config (the run page's autotune links)
        run = session.get(Run, run_id)
        compilations = list(run.compilations) if run is not None else []
        for start in range(0, len(compilations), _FACTS_CHUNK):  # committed by chunks: no lock held below
            foreground.give_way()
            kernel_config.store_ir_facts(session, compilations[start:start + _FACTS_CHUNK])
            session.commit()
    with db.session() as session:  # then the large adjacent diffs, each committed as it is stored
        adjacent_diffs.store_run(session, run_id)
        run = session.get(Run, run_id)
        if run is None:
            return
        # read the stats again, locked: the op index's backfill may have written them meanwhile
        session.refresh(run, with_for_update=True)
        run.stats = {**(run.stats or {}), **dict.fromkeys(MARKS, 1)}
        session.commit()


def prepare_pending(db: Database) -> int:
    with db.session() as session:  # kernel history's points first: a check or history page waits for them
        try:
            ensure_points(session, limit=1000, wait=False)
        except Exception:  # the pages write what they need themselves
            log.exception("kernel history: writing points failed")
    done = 0
    for run_id in pending_runs(db):
        foreground.give_way()
        try:
            prepare_run(db, run_id)
            done += 1
        except Exception:  # one bad run must not stop the others; its map still works, only slower
            log.exception("map indexes: run %s failed", run_id)
    return done


async def map_prep_loop(db: Database, idle: float = IDLE_SECONDS, level: int = recompress.DEFAULT_LEVEL) -> None:
    from starlette.concurrency import run_in_threadpool

    stopping = threading.Event()  # shutdown: a recompression round ends after its current text

    def interrupted() -> bool:  # a new upload's indexes come first; page requests before either
        foreground.give_way()
        return _wake.is_set() or stopping.is_set()

    def in_background(function, *args):
        with foreground.background():
            return function(*args)

    try:
        while True:
            _wake.clear()
            try:
                done = await run_in_threadpool(in_background, prepare_pending, db)
                if done:
                    log.info("map indexes: %d runs prepared", done)
                # after the indexes, which a visit waits for
                squeezed = await run_in_threadpool(in_background, compaction.compact_pending, db.session, level,
                                                   interrupted)
                if squeezed.blobs:
                    log.info("compact: %d frames, %d -> %d bytes", squeezed.blobs, squeezed.bytes_before,
                             squeezed.bytes_after)
            except Exception:
                log.exception("map indexes: a round failed")
            waited = 0.0  # sleep in the event loop, so shutdown's cancel ends the loop at once
            while waited < idle and not _wake.is_set():
                await asyncio.sleep(0.5)
                waited += 0.5
    finally:
        stopping.set()


def start_map_prep(db: Database, level: int = recompress.DEFAULT_LEVEL) -> asyncio.Task:
    return asyncio.create_task(map_prep_loop(db, level=level), name="irlens-map-prep")
