"""Searching the op index: `op:NAME`, `group:KEY` and `layout:KIND` words find compilations whose IR
holds every one of them, with the first and last snapshot where the first word's term occurs.

The other words of the query (app/insight/run_search.py) narrow the runs, and only runs the reader may list are
searched. Results are newest run first, then compilation order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import ColumnElement

from app.highlight.hwops import GROUPS_BY_KEY
from app.insight.op_index import query_names, unindexed_runs
from app.insight.pass_attribution import dump_passes
from app.insight.run_search import TOKEN, _like, parse_query, run_conditions
from app.store.models import Compilation, CompilationTerm, OpTerm, Run
from app.urls import Urls

INDEX_FIELDS = ("op", "group", "layout")
LIMIT = 100
SUGGESTIONS = 8
DRIVE_BY_RUNS = 2000  # index rows of a term past which the search walks runs newest first
RUN_PAGE = 1000  # runs in the first page of that walk (each next page is 4 times larger)


@dataclass
class IndexQuery:
    terms: list[tuple[str, str]] = field(default_factory=list)  # (field, value) in query order
    rest: str = ""  # the words for app/insight/run_search.py


def split_query(text: str) -> IndexQuery:
    """Take the op:/group:/layout: words out of a query; the rest is an ordinary run search."""
    query = IndexQuery()
    rest = []
    for match in TOKEN.finditer(text):
        name = (match["field"] or "").lower()
        value = match["quoted"] if match["quoted"] is not None else match["bare"].strip('"')
        if name in INDEX_FIELDS:
            if value:
                query.terms.append((name, value))
        else:
            rest.append(match.group(0))
    query.rest = " ".join(rest)
    return query


def _ids(session: Session, names: list[str]) -> list[int]:
    return list(session.scalars(select(OpTerm.id).where(OpTerm.name.in_(names))))


def suggestions(session: Session, field_name: str, value: str) -> list[str]:
    """Known terms of the same field whose name contains the value: for a query that matched nothing."""
    needle = value.lstrip("#").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"{field_name}:%{needle}%"
    names = session.scalars(
        select(OpTerm.name).where(OpTerm.name.like(pattern, escape="\\")).order_by(OpTerm.name).limit(SUGGESTIONS)
    )
    return [name.split(":", 1)[1] for name in names]


def search_compilations(
    session: Session, query: IndexQuery, urls: Urls, visible: ColumnElement[bool] | None = None, limit: int = LIMIT
) -> dict:
    """The compilations matching every index word (and the rest of the query), with first/last."""
    resolved = []
    unknown = []
    for field_name, value in query.terms:
        ids = _ids(session, query_names(field_name, value))
        resolved.append(ids)
        if not ids:
            unknown.append({
                "term": f"{field_name}:{value}",
                "suggestions": suggestions(session, field_name, value),
                "known_group": field_name != "group" or value.lower() in GROUPS_BY_KEY,
                # `op:tma` names a hardware group, not an op: offer the group's search as well
                "related": [f"group:{value.lower()}"]
                if field_name != "group" and value.lower() in GROUPS_BY_KEY else [],
            })
    result = {
        "terms": [f"{name}:{value}" for name, value in query.terms],
        "compilations": [],
        "more": False,
        "unknown": unknown,
        "unindexed_runs": 0,
    }
    if unknown:
        result["unindexed_runs"] = len(unindexed_runs(session))
        return result
    # An alias, so that app/insight/run_search.py's kernel conditions (EXISTS over compilations of the run) do not
    # correlate with the compilation found here.
    found = aliased(Compilation)
    primary = aliased(CompilationTerm)
    holds = select(primary.compilation_pk).where(primary.term_id.in_(resolved[0]))
    statement = (
        select(found.pk, found.run_id, found.ordinal, found.kernel, found.status, Run.title)
        .select_from(Run)
        .join(found, found.run_id == Run.id)
        .order_by(Run.created_at.desc(), Run.id, found.ordinal)
    )
    for ids in resolved[1:]:
        other = aliased(CompilationTerm)
        statement = statement.where(exists().where(other.compilation_pk == found.pk, other.term_id.in_(ids)))
    rest = parse_query(query.rest)
    for name, value in rest.terms:  # kernel:NAME narrows the compilation itself, not just its run
        if name == "kernel":
            statement = statement.where(found.kernel.ilike(_like(value), escape="\\"))
    conditions = run_conditions(rest, visible)
    if (session.scalar(select(func.count()).select_from(holds.limit(DRIVE_BY_RUNS + 1).subquery())) or 0) > DRIVE_BY_RUNS:
        rows = _newest_first(session, statement, conditions, found, primary, resolved[0], limit + 1)
    else:  # a rarer term: from its own index range, sorting what it finds
        statement = statement.where(found.pk.in_(holds), *conditions).limit(limit + 1)
        rows = list(session.execute(statement))
    result["more"] = len(rows) > limit
    rows = rows[:limit]
    spans = _spans(session, [row.pk for row in rows], resolved[0])
    if not rows:  # say whether older runs could still hold it
        result["unindexed_runs"] = len(unindexed_runs(session))
    passes = _pass_names(session, rows, spans)
    for row in rows:
        first, last = spans[row.pk]
        result["compilations"].append({
            "url": urls.compilation(row.run_id, row.ordinal),
            "kernel": row.kernel,
            "status": row.status,
            "run": row.run_id,
            "run_title": row.title,
            "run_url": urls.run(row.run_id),
            "first": _where(urls, row, first, passes),
            "last": _where(urls, row, last, passes),
        })
    return result


def _newest_first(session: Session, statement, conditions: list, found, primary, term_ids: list[int],
                  wanted: int) -> list:
    """A common term is met within the newest runs: take runs newest first, a growing page at a
    time, and look for the term only in their compilations (both databases would otherwise join
    every compilation holding it and sort them all)."""
    runs = select(Run.id).where(*conditions).order_by(Run.created_at.desc(), Run.id)
    statement = statement.where(exists().where(primary.compilation_pk == found.pk, primary.term_id.in_(term_ids)))
    rows: list = []
    offset, size = 0, RUN_PAGE
    while len(rows) < wanted:
        page = list(session.scalars(runs.offset(offset).limit(size)))
        if page:
            rows += session.execute(statement.where(Run.id.in_(page)).limit(wanted - len(rows))).all()
        if len(page) < size:
            break
        offset, size = offset + size, size * 4
    return rows


def _spans(session: Session, pks: list[int], term_ids: list[int]) -> dict[int, tuple[int, int]]:
    """First and last index of the term in each compilation (both spellings of an op: the widest)."""
    if not pks:
        return {}
    rows = session.execute(
        select(CompilationTerm.compilation_pk, func.min(CompilationTerm.first_index), func.max(CompilationTerm.last_index))
        .where(CompilationTerm.compilation_pk.in_(pks), CompilationTerm.term_id.in_(term_ids))
        .group_by(CompilationTerm.compilation_pk)
    )
    return {pk: (first, last) for pk, first, last in rows}


def _pass_names(session: Session, rows: list, spans: dict) -> dict[tuple[int, int], dict]:
    """The dump pass and the pass that made the change, by (compilation, index) key."""
    wanted = {(row.pk, index) for row in rows for index in spans[row.pk]}
    return dump_passes(session, {pk for pk, _ in wanted}, wanted)


def _where(urls: Urls, row, index: int, passes: dict) -> dict:
    return _place(urls, row.run_id, row.ordinal, index, passes.get((row.pk, index)) or {})


def _place(urls: Urls, run_id: str, ordinal: int, index: int, dump: dict) -> dict:
    """A snapshot where a term is seen: its dump's own pass, and the pass whose work it first shows
    (``introduced_by``; None when the term came from the front end)."""
    return {"index": index, "pass": dump.get("pass"), "when": dump.get("when"),
            "introduced_by": dump.get("introduced_by"), "url": urls.snapshot(run_id, ordinal, index)}


def first_seen(session: Session, compilation: Compilation, urls: Urls) -> list[dict]:
    """A compilation's groups and layout kinds (and ops, apart) with where each first and last occurs."""
    rows = session.execute(
        select(OpTerm.name, CompilationTerm.first_index, CompilationTerm.last_index)
        .join(OpTerm, OpTerm.id == CompilationTerm.term_id)
        .where(CompilationTerm.compilation_pk == compilation.pk)
        .order_by(CompilationTerm.first_index, OpTerm.name)
    )
    passes = {index: dump for (_, index), dump in dump_passes(session, [compilation.pk]).items()}
    run_id, ordinal = compilation.run_id, compilation.ordinal
    entries = []
    for name, first, last in rows:
        field_name, value = name.split(":", 1)
        entries.append({
            "term": name,
            "field": field_name,
            "value": value,
            "label": GROUPS_BY_KEY[value].label if field_name == "group" and value in GROUPS_BY_KEY else value,
            "search_url": urls.search(name),
            "first": _place(urls, run_id, ordinal, first, passes.get(first) or {}),
            "last": _place(urls, run_id, ordinal, last, passes.get(last) or {}),
        })
    return entries


def indexed(session: Session, compilation: Compilation) -> bool:
    run = session.get(Run, compilation.run_id)
    return bool(run is not None and (run.stats or {}).get("op_index"))


__all__ = ["INDEX_FIELDS", "IndexQuery", "first_seen", "indexed", "search_compilations", "split_query"]
