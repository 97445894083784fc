"""Finding runs by title, tag, kernel name and uploader: /search?q=... (and /search.json?q=...).

A query is words, all of which must match. A bare word matches a run whose title, a tag, a kernel
name or the uploader contains it (case-insensitive). A qualified word narrows it:
`tag:NAME` (a tag, exactly), `label:KEY=VALUE` (a label, exactly; `label:KEY`: has that label), `kernel:TEXT`, `owner:NAME` (or `by:NAME`, exactly), `title:TEXT`.
Quote words with spaces: `title:"flash attention"`. Only runs the reader may list are searched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from sqlalchemy import String, and_, cast, exists, func, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app.insight.page_data import iso_time
from app.store.models import Compilation, Run
from app.urls import Urls

FIELDS = {"tag": "tag", "label": "label", "kernel": "kernel", "owner": "owner", "by": "owner", "title": "title"}
KERNELS_SHOWN = 8


@dataclass
class Query:
    words: list[str] = field(default_factory=list)  # match any field
    terms: list[tuple[str, str]] = field(default_factory=list)  # (field, value)

    @property
    def empty(self) -> bool:
        return not self.words and not self.terms

    def kernel_words(self) -> list[str]:
        return self.words + [value for name, value in self.terms if name == "kernel"]


TOKEN = re.compile(r'(?:(?P<field>[A-Za-z]+):)?(?:"(?P<quoted>[^"]*)"|(?P<bare>\S+))')


def parse_query(text: str) -> Query:
    query = Query()
    for match in TOKEN.finditer(text):
        field_name = (match["field"] or "").lower()
        value = match["quoted"] if match["quoted"] is not None else match["bare"].strip('"')
        if not value:
            continue
        if field_name in FIELDS:
            query.terms.append((FIELDS[field_name], value))
        elif field_name:  # not a field we know: the whole thing is a word
            query.words.append(f"{match['field']}:{value}")
        else:
            query.words.append(value)
    return query


def _like(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _tag_text(value: str, exact: bool) -> str:
    """A LIKE pattern over the tags' JSON text: a tag is stored as json.dumps writes it."""
    encoded = json.dumps(value)[1:-1]
    return _like(f'"{encoded}"' if exact else encoded)


def label_condition(value: str) -> ColumnElement[bool]:
    """`KEY=VALUE` (that label, exactly) or `KEY` (any value), over the labels' JSON text as stored
    (json.dumps: `{"triton": "3.7.1"}`)."""
    key, sep, wanted = value.partition("=")
    text = json.dumps(key.strip()) + ": " + (json.dumps(wanted.strip()) if sep else "")
    return cast(Run.labels, String).ilike(_like(text), escape="\\")


def _kernel(pattern: str) -> ColumnElement[bool]:
    return exists().where(Compilation.run_id == Run.id, Compilation.kernel.ilike(pattern, escape="\\"))


def _term(name: str, value: str) -> ColumnElement[bool]:
    tags = cast(Run.tags, String)
    if name == "tag":
        return tags.ilike(_tag_text(value, exact=True), escape="\\")
    if name == "kernel":
        return _kernel(_like(value))
    if name == "label":
        return label_condition(value)
    if name == "owner":
        return func.lower(Run.owner) == value.lower()
    return Run.title.ilike(_like(value), escape="\\")


def _word(value: str) -> ColumnElement[bool]:
    pattern = _like(value)
    return or_(
        Run.title.ilike(pattern, escape="\\"),
        Run.owner.ilike(pattern, escape="\\"),
        cast(Run.tags, String).ilike(_tag_text(value, exact=False), escape="\\"),
        _kernel(pattern),
    )


def run_conditions(query: Query, visible: ColumnElement[bool] | None = None) -> list[ColumnElement[bool]]:
    """The conditions on Run that a query's words and fields make (app/insight/op_search.py uses them too)."""
    conditions = [_word(word) for word in query.words] + [_term(name, value) for name, value in query.terms]
    if visible is not None:
        conditions.append(visible)
    return conditions


def search_runs(
    session: Session,
    text: str,
    urls: Urls,
    visible: ColumnElement[bool] | None = None,
    limit: int = 100,
) -> list[dict]:
    """Runs matching the query, newest first, each with the kernels that matched (or its first few)."""
    query = parse_query(text)
    conditions = run_conditions(query, visible)
    statement = select(Run).order_by(Run.created_at.desc(), Run.id).limit(limit)
    if conditions:
        statement = statement.where(and_(*conditions))
    runs = list(session.scalars(statement))
    kernels = _kernels(session, [run.id for run in runs])
    wanted = [word.lower() for word in query.kernel_words()]
    results = []
    for run in runs:
        compiled = kernels.get(run.id, [])
        names = list(dict.fromkeys(compiled))
        matched = [name for name in names if any(word in name.lower() for word in wanted)]
        results.append(
            {
                "run": run.id,
                "url": urls.run(run.id),
                "title": run.title,
                "owner": run.owner,
                "created_at": iso_time(run.created_at),
                "tags": run.tags or [],
                "listed": bool(run.listed),
                "compilations": len(compiled),
                "kernels": (matched or names)[:KERNELS_SHOWN],
                "matched_kernels": matched,
            }
        )
    return results


def _kernels(session: Session, run_ids: list[str]) -> dict[str, list[str]]:
    """Each run's kernel names in compilation order, one entry per compilation."""
    found: dict[str, list[str]] = {}
    if not run_ids:
        return found
    rows = session.execute(
        select(Compilation.run_id, Compilation.kernel)
        .where(Compilation.run_id.in_(run_ids))
        .order_by(Compilation.run_id, Compilation.ordinal)
    )
    for run_id, kernel in rows:
        found.setdefault(run_id, []).append(kernel or "?")
    return found
