"""Team workflow: search runs (and complete the word being typed in the search box), and (for a run's owner) retitle, retag, list/unlist or delete it.

HTML forms post to /runs/ID/edit and /runs/ID/delete and are redirected; scripts use
PATCH /runs/ID (JSON) and DELETE /runs/ID with `Authorization: Bearer TOKEN`.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Body, Form, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy.orm import Session, object_session

from app.insight.op_search import search_compilations, split_query
from app.insight.page_data import iso_time
from app.insight.remark_search import search_remarks, split_remarks
from app.insight.run_search import search_runs
from app.insight.search_suggest import suggest
from app.settings import Settings
from app.store.generation import bump_history
from app.store.labels import LabelError, labels_text, parse_labels
from app.store.models import Run
from app.store.retention import delete_run
from app.urls import Urls
from app.web.auth import Identity, IdentityDep, check_may_change, may_change, visible_runs
from app.web.page_cache import forget_runs
from app.web.responder import SessionDep, UrlsDep, prefers_html, respond, strip_json
from app.web.security import CSRF

router = APIRouter()
log = logging.getLogger("irlens")

MAX_TAGS = 20
MAX_TAG_LENGTH = 60


def _load_run(session: Session, run_id: str) -> Run:
    run = session.get(Run, strip_json(run_id))
    if run is None:
        raise HTTPException(404, "no such run")
    return run


def parse_tags(values: list[str] | str | None) -> list[str]:
    """Tags from a form ("a, b" or several fields) or JSON: trimmed, no empties, no repeats."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    tags: list[str] = []
    for value in values:
        for tag in str(value).split(","):
            tag = " ".join(tag.split())[:MAX_TAG_LENGTH]
            if tag and tag not in tags:
                tags.append(tag)
    return tags[:MAX_TAGS]


def run_fields(run: Run, urls: Urls, identity: Identity, settings: Settings) -> dict:
    return {
        "run": run.id,
        "url": urls.run(run.id),
        "title": run.title,
        "tags": run.tags or [],
        "labels": run.labels or {},
        "labels_text": labels_text(run.labels),
        "listed": bool(run.listed),
        "owner": run.owner,
        "created_at": iso_time(run.created_at),
        "may_change": may_change(identity, run, settings),
        "edit_url": urls.run_edit(run.id),
        "delete_url": urls.run_delete(run.id),
    }


def _apply(run: Run, title: str | None, tags: list[str] | None, listed: bool | None,
           labels: dict[str, str] | None = None) -> list[str]:
    changed = []
    if labels is not None and labels != (run.labels or {}):
        run.labels = labels
        changed.append("labels")
    if title is not None and title.strip()[:300] != run.title:
        run.title = title.strip()[:300]
        changed.append("title")
    if tags is not None and tags != (run.tags or []):
        run.tags = tags
        changed.append("tags")
    if listed is not None and listed != bool(run.listed):
        run.listed = listed
        changed.append("listed")
        bump_history(object_session(run))  # who sees the run's kernels changed
    return changed


# -- search -----------------------------------------------------------------------------------------


@router.get("/search")
@router.get("/search.json")
def search(request: Request, session: SessionDep, urls: UrlsDep, identity: IdentityDep, q: str = ""):
    settings: Settings = request.app.state.settings
    visible = visible_runs(identity, settings)
    remark_terms, rest = split_remarks(q)
    if remark_terms:  # remark: words: the compiler's remarks, at their compilation and pass
        found = search_remarks(session, remark_terms, rest, urls, visible)
        return respond(request, "search.html", {"q": q, "count": len(found["remarks"]), "runs": [], **found})
    index_query = split_query(q)
    if index_query.terms:  # op:, group:, layout: words: compilations, from the op index
        found = search_compilations(session, index_query, urls, visible)
        return respond(request, "search.html", {"q": q, "count": len(found["compilations"]), "runs": [], **found})
    runs = search_runs(session, q, urls, visible)
    return respond(request, "search.html", {"q": q, "count": len(runs), "runs": runs})


MAX_WORD = 200  # a word longer than this is no name being typed


@router.get("/search/suggest")
@router.get("/search/suggest.json")
def search_suggest(request: Request, session: SessionDep, identity: IdentityDep, q: str = ""):
    """`q` is the one word at the caret (static/search-suggest.js finds it); HTML: the <li role=option> list."""
    visible = visible_runs(identity, request.app.state.settings)
    data = suggest(session, q[:MAX_WORD], visible) if q.strip() else {"q": q, "field": "", "value": "", "suggestions": []}
    return respond(request, "_suggest.html", data)


# -- edit ----------------------------------------------------------------------------------------------


@router.get("/runs/{run_id}/edit")
@router.get("/runs/{run_id}/edit.json")
def edit_page(request: Request, run_id: str, session: SessionDep, urls: UrlsDep, identity: IdentityDep):
    run = _load_run(session, run_id)
    data = run_fields(run, urls, identity, request.app.state.settings)
    data["identity"] = identity.as_dict()
    data["signin_url"] = urls.signin(urls.run_edit(run.id))
    return respond(request, "_manage.html", data)


@router.post("/runs/{run_id}/edit", dependencies=[CSRF])
def edit_form(
    request: Request,
    run_id: str,
    session: SessionDep,
    urls: UrlsDep,
    identity: IdentityDep,
    title: Annotated[str | None, Form()] = None,
    tags: Annotated[str | None, Form()] = None,
    listed: Annotated[str | None, Form()] = None,
    labels: Annotated[str | None, Form()] = None,
):
    settings: Settings = request.app.state.settings
    run = _load_run(session, run_id)
    check_may_change(identity, run, settings)
    new_labels = _labels(labels)
    # The form sends listed=0 from a hidden field, then listed=1 if the box is ticked: the last one counts.
    listed_value = None if listed is None else listed.lower() not in ("", "0", "off", "false")
    changed = _apply(run, title, parse_tags(tags) if tags is not None else None, listed_value, new_labels)
    session.commit()
    forget_runs(run.id)
    _log_change(identity, run, changed)
    if prefers_html(request):
        return RedirectResponse(urls.run(run.id), status_code=303)
    return JSONResponse(run_fields(run, urls, identity, settings))


@router.patch("/runs/{run_id}", dependencies=[CSRF])
def edit_json(
    request: Request,
    run_id: str,
    session: SessionDep,
    urls: UrlsDep,
    identity: IdentityDep,
    changes: Annotated[
        dict, Body(examples=[{"title": "fp8 matmul", "tags": ["fp8", "sm90"], "listed": True}])
    ],
):
    """Change any of `title`, `tags` (a list, or "a, b"), `listed` (true or false)."""
    settings: Settings = request.app.state.settings
    run = _load_run(session, run_id)
    check_may_change(identity, run, settings)
    unknown = set(changes) - {"title", "tags", "listed", "labels"}
    if unknown:
        raise HTTPException(
            422, f"unknown fields: {', '.join(sorted(unknown))} (title, tags, labels and listed can change)"
        )
    title = changes.get("title")
    listed = changes.get("listed")
    if (title is not None and not isinstance(title, str)) or (
        listed is not None and not isinstance(listed, bool)
    ):
        raise HTTPException(422, "title must be a string and listed true or false")
    tags = parse_tags(changes["tags"]) if "tags" in changes else None
    new_labels = _labels(changes["labels"]) if "labels" in changes else None
    changed = _apply(run, title, tags, listed, new_labels)
    session.commit()
    forget_runs(run.id)
    _log_change(identity, run, changed)
    return run_fields(run, urls, identity, settings)


def _labels(value) -> dict[str, str] | None:
    """Labels from the form ("k=v, k2=v2") or JSON (a dict, or a list of "k=v"); 422 when malformed."""
    if value is None:
        return None
    if not isinstance(value, (str, list, dict)) or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
        raise HTTPException(422, "labels must be a dict of text values, or KEY=VALUE strings")
    try:
        return parse_labels(value)
    except LabelError as error:
        raise HTTPException(422, str(error)) from error


def _log_change(identity: Identity, run: Run, changed: list[str]) -> None:
    if changed:
        log.info("run %s: %s changed by %s", run.id, ", ".join(changed), identity.name or "anonymous")


# -- delete --------------------------------------------------------------------------------------------


def _delete(request: Request, session: Session, run_id: str, identity: Identity) -> dict:
    run = _load_run(session, run_id)
    check_may_change(identity, run, request.app.state.settings)
    session.rollback()  # end our read transaction before another session deletes
    result = delete_run(request.app.state.db, run.id, f"deleted by {identity.name or 'anonymous'}:")
    if result is None:
        raise HTTPException(404, "no such run")
    return {"deleted": result.run, "title": result.title, "blobs_removed": result.blobs}


@router.delete("/runs/{run_id}", dependencies=[CSRF])
def delete_json(request: Request, run_id: str, session: SessionDep, identity: IdentityDep):
    return _delete(request, session, run_id, identity)


@router.post("/runs/{run_id}/delete", dependencies=[CSRF])
def delete_form(
    request: Request,
    run_id: str,
    session: SessionDep,
    urls: UrlsDep,
    identity: IdentityDep,
    confirm: Annotated[str | None, Form()] = None,
):
    if prefers_html(request) and not confirm:
        return RedirectResponse(urls.run_edit(strip_json(run_id)), status_code=303)
    result = _delete(request, session, run_id, identity)
    if prefers_html(request):
        return RedirectResponse(urls.home(), status_code=303)
    return result
