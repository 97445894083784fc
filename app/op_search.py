"""Searching the op index: `op:NAME`, `group:KEY` and `layout:KIND` words find compilations whose IR
holds every one of them, with the first and last snapshot where the first word's term occurs.

The other words of the query (app/search.py) narrow the runs, and only runs the reader may list are
searched. Results are newest run first, then compilation order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import and_, exists, select, tuple_
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import ColumnElement

from app.highlight.hwops import GROUPS_BY_KEY
from app.models import Compilation, CompilationTerm, OpTerm, Run, Snapshot
from app.op_index import query_names, unindexed_runs
from app.search import TOKEN, _like, parse_query, run_conditions
from app.urls import Urls

INDEX_FIELDS = ("op", "group", "layout")
LIMIT = 100
SUGGESTIONS = 8


@dataclass
class IndexQuery:
    terms: list[tuple[str, str]] = field(default_factory=list)  # (field, value) in query order
    rest: str = ""  # the words for app/search.py


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
    primary = aliased(CompilationTerm)
    # An alias, so that app/search.py's kernel conditions (EXISTS over compilations of the run) do not
    # correlate with the compilation found here.
    found = aliased(Compilation)
    statement = (
        select(
            found.pk, found.run_id, found.ordinal, found.kernel, found.status,
            Run.title, primary.first_index, primary.last_index,
        )
        .join(found, found.pk == primary.compilation_pk)
        .join(Run, Run.id == found.run_id)
        .where(primary.term_id.in_(resolved[0]))
        .order_by(Run.created_at.desc(), Run.id, found.ordinal)
        .limit(limit + 1)
    )
    for ids in resolved[1:]:
        other = aliased(CompilationTerm)
        statement = statement.where(exists().where(other.compilation_pk == found.pk, other.term_id.in_(ids)))
    rest = parse_query(query.rest)
    for name, value in rest.terms:  # kernel:NAME narrows the compilation itself, not just its run
        if name == "kernel":
            statement = statement.where(found.kernel.ilike(_like(value), escape="\\"))
    conditions = run_conditions(rest, visible)
    if conditions:
        statement = statement.where(and_(*conditions))
    rows = list(session.execute(statement))
    result["more"] = len(rows) > limit
    rows = _merge_aliases(rows[:limit])
    if not rows:  # say whether older runs could still hold it
        result["unindexed_runs"] = len(unindexed_runs(session))
    passes = _pass_names(session, rows)
    for row in rows:
        result["compilations"].append({
            "url": urls.compilation(row.run_id, row.ordinal),
            "kernel": row.kernel,
            "status": row.status,
            "run": row.run_id,
            "run_title": row.title,
            "run_url": urls.run(row.run_id),
            "first": _where(urls, row, row.first_index, passes),
            "last": _where(urls, row, row.last_index, passes),
        })
    return result


def _merge_aliases(rows: list) -> list:
    """One row per compilation: a compilation holding both spellings of an op keeps the widest span."""
    merged: dict[int, object] = {}
    for row in rows:
        seen = merged.get(row.pk)
        if seen is None:
            merged[row.pk] = row
        else:
            merged[row.pk] = seen._replace(
                first_index=min(seen.first_index, row.first_index), last_index=max(seen.last_index, row.last_index)
            )
    return list(merged.values())


def _pass_names(session: Session, rows: list) -> dict[tuple[int, int], str]:
    keys = sorted({(row.pk, index) for row in rows for index in (row.first_index, row.last_index)})
    found: dict[tuple[int, int], str] = {}
    for start in range(0, len(keys), 200):
        chunk = keys[start:start + 200]
        statement = select(Snapshot.compilation_pk, Snapshot.index, Snapshot.pass_name).where(
            tuple_(Snapshot.compilation_pk, Snapshot.index).in_(chunk)
        )
        found.update(((pk, index), name) for pk, index, name in session.execute(statement))
    return found


def _where(urls: Urls, row, index: int, passes: dict) -> dict:
    return {"index": index, "pass": passes.get((row.pk, index)), "url": urls.snapshot(row.run_id, row.ordinal, index)}


def first_seen(session: Session, compilation: Compilation, urls: Urls) -> list[dict]:
    """A compilation's groups and layout kinds (and ops, apart) with where each first and last occurs."""
    rows = session.execute(
        select(OpTerm.name, CompilationTerm.first_index, CompilationTerm.last_index)
        .join(OpTerm, OpTerm.id == CompilationTerm.term_id)
        .where(CompilationTerm.compilation_pk == compilation.pk)
        .order_by(CompilationTerm.first_index, OpTerm.name)
    )
    passes = {
        index: name for index, name in session.execute(
            select(Snapshot.index, Snapshot.pass_name).where(Snapshot.compilation_pk == compilation.pk)
        )
    }
    entries = []
    for name, first, last in rows:
        field_name, value = name.split(":", 1)
        entries.append({
            "term": name,
            "field": field_name,
            "value": value,
            "label": GROUPS_BY_KEY[value].label if field_name == "group" and value in GROUPS_BY_KEY else value,
            "search_url": urls.search(name),
            "first": {"index": first, "pass": passes.get(first),
                      "url": urls.snapshot(compilation.run_id, compilation.ordinal, first)},
            "last": {"index": last, "pass": passes.get(last),
                     "url": urls.snapshot(compilation.run_id, compilation.ordinal, last)},
        })
    return entries


def indexed(session: Session, compilation: Compilation) -> bool:
    run = session.get(Run, compilation.run_id)
    return bool(run is not None and (run.stats or {}).get("op_index"))


__all__ = ["INDEX_FIELDS", "IndexQuery", "first_seen", "indexed", "search_compilations", "split_query"]
