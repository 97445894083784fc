"""Finding the compiler's remarks: `remark:TEXT` words find the remarks, warnings and notes (MLIR
diagnostics, `MLIR_ENABLE_DIAGNOSTICS=remarks`) whose message contains TEXT, case-insensitive
(`remark:pipelin` finds "Pipelining will be disabled"). Several remark: words must all match the same
message; the query's other words (app/insight/run_search.py) narrow the runs, `kernel:` the
compilation. Each hit names its compilation, the pass that emitted it and the snapshot where its op
shows (app/insight/remarks.py). Only runs the reader may list are searched; newest run first."""

from __future__ import annotations

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import ColumnElement

from app.insight.remarks import SEVERITIES, compilation_remarks
from app.insight.run_search import TOKEN, _like, parse_query, run_conditions
from app.store.models import Compilation, Diagnostic, Run
from app.urls import Urls

FIELD = "remark"
LIMIT = 100
SUGGESTIONS = 8


def split_remarks(text: str) -> tuple[list[str], str]:
    """(the remark: values, the rest of the query)."""
    terms, rest = [], []
    for match in TOKEN.finditer(text):
        name = (match["field"] or "").lower()
        value = match["quoted"] if match["quoted"] is not None else match["bare"].strip('"')
        if name == FIELD:
            if value:
                terms.append(value)
        else:
            rest.append(match.group(0))
    return terms, " ".join(rest)


def _matching(terms: list[str]) -> list[ColumnElement[bool]]:
    return [Diagnostic.kind == "mlir", Diagnostic.severity.in_(SEVERITIES),
            *(Diagnostic.message.ilike(_like(term), escape="\\") for term in terms)]


def search_remarks(session: Session, terms: list[str], rest: str, urls: Urls,
                   visible: ColumnElement[bool] | None = None, limit: int = LIMIT) -> dict:
    """{"remark_terms", "remarks": [{"message", "severity", "file", "line", "col", "pass", "snapshot",
    "kernel", "compilation_url", "run", "run_title", "run_url"}], "more", "suggestions"}."""
    query = parse_query(rest)
    # an alias, so that run_search's kernel conditions (EXISTS over the run's compilations) do not
    # correlate with the compilation found here
    found = aliased(Compilation)
    statement = (
        select(Diagnostic.pk, found, Run.title)
        .join(found, found.pk == Diagnostic.compilation_pk)
        .join(Run, Run.id == found.run_id)
        .where(*_matching(terms), *run_conditions(query, visible))
        .order_by(Run.created_at.desc(), Run.id, found.ordinal, Diagnostic.log_line)
        .limit(limit + 1)
    )
    for name, value in query.terms:  # kernel:NAME narrows the compilation itself
        if name == "kernel":
            statement = statement.where(found.kernel.ilike(_like(value), escape="\\"))
    rows = list(session.execute(statement))
    more = len(rows) > limit
    rows = rows[:limit]
    placed: dict[int, dict[int, dict]] = {}  # compilation pk -> log line -> placed remark
    hits = []
    for pk, compilation, title in rows:
        if compilation.pk not in placed:
            placed[compilation.pk] = {r["log_line"]: r for r in compilation_remarks(session, compilation, urls)}
        diagnostic = session.get(Diagnostic, pk)
        remark = placed[compilation.pk].get(diagnostic.log_line) or {}
        hits.append({
            "message": diagnostic.message, "severity": diagnostic.severity, "file": diagnostic.file,
            "line": diagnostic.line, "col": diagnostic.col, "pass": remark.get("pass"),
            "snapshot": remark.get("snapshot"), "kernel": compilation.kernel,
            "compilation_url": urls.compilation(compilation.run_id, compilation.ordinal),
            "run": compilation.run_id, "run_title": title, "run_url": urls.run(compilation.run_id),
        })
    return {"remark_terms": [f"{FIELD}:{term}" for term in terms], "remarks": hits, "more": more,
            "suggestions": [] if hits else remark_messages(session, "", visible)}


def remark_messages(session: Session, value: str, visible: ColumnElement[bool] | None = None,
                    limit: int = SUGGESTIONS) -> list[str]:
    """Distinct remark messages containing the value (the first 80 characters of each), most common
    first: what `remark:` completes to, and what a search that found nothing offers."""
    conditions = [] if visible is None else [visible]
    head = func.substr(Diagnostic.message, 1, 80)
    rows = session.execute(
        select(head, func.count())
        .join(Compilation, Compilation.pk == Diagnostic.compilation_pk)
        .join(Run, Run.id == Compilation.run_id)
        .where(and_(*_matching([value] if value else []), *conditions))
        .group_by(head)
        .order_by(func.count().desc(), head)
        .limit(limit)
    )
    return [message for message, _ in rows]
