"""Render a few small stored pages when a server starts, so its first visitor does not pay one-time costs.

Compiling the templates at start-up (app/web/responder.py) was not all of it: a fresh server's first snapshot
page still cost ~40 ms more server CPU than the same page after any other (211-223 against 171-178
ms for the corpus's 21,108-line snapshot), for SQLAlchemy's first compilation of each statement,
lexer states compiled on first use, and the like. One small snapshot page of each kind (and its line
window, which the page's script fetches as it scrolls), rendered through the app itself before the
server takes requests, pays them instead. Runs only in `irlens serve`'s app; errors are logged and
ignored: a warm-up must never keep a server from starting.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from sqlalchemy import select

from app.store.models import Banner, Compilation, Run, Snapshot

log = logging.getLogger("irlens")
MIN_LINES = 20  # the smallest page of a kind that has this many lines: enough to reach every step
RUNS_TRIED = 20


def warm_paths(app: FastAPI) -> list[str]:
    """A small snapshot page of each kind in the newest run that has any, with one line window of
    each. The newest run may hold none (a cache folder without IR, a timing log), so up to RUNS_TRIED
    runs are looked at, newest first; no more: a team database's million snapshots must not delay a
    server's start."""
    urls = app.state.urls
    with app.state.db.session() as session:
        for run_id in session.scalars(select(Run.id).order_by(Run.created_at.desc()).limit(RUNS_TRIED)):
            rows = session.execute(
                select(Banner.kind, Snapshot.line_count, Compilation.ordinal, Snapshot.index)
                .join(Compilation, Snapshot.compilation_pk == Compilation.pk)
                .join(Banner, Snapshot.banner_pk == Banner.pk)
                .where(Compilation.run_id == run_id, Snapshot.line_count >= MIN_LINES)
            ).all()
            if rows:
                break
        else:
            return []
    smallest: dict[str, tuple] = {}
    for kind, lines, ordinal, index in rows:
        smallest[kind] = min(smallest.get(kind, (lines, ordinal, index)), (lines, ordinal, index))
    paths = []
    for _lines, ordinal, index in smallest.values():
        page = urls.snapshot(run_id, ordinal, index)
        paths += [page, f"{page}/lines?start=0&count=10"]
    return paths


async def warm_up(app: FastAPI) -> int:
    """Request the warm-up pages from the app itself; returns how many answered 200."""
    import httpx  # here: only a serving process needs it

    try:
        paths = warm_paths(app)
        transport = httpx.ASGITransport(app=app)
        answered = 0
        async with httpx.AsyncClient(transport=transport, base_url="http://warm-up") as client:
            for path in paths:
                response = await client.get(path, headers={"Accept-Encoding": "gzip", "HX-Request": "true"}
                                            if "/lines?" in path else {"Accept-Encoding": "gzip"})
                answered += response.status_code == 200
        return answered
    except Exception:  # see the module's docstring
        log.exception("warm-up pages failed")
        return 0
