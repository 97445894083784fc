"""Completions for the word being typed in the search box: /search/suggest?q=WORD (and its .json twin).

`op:PART` gives the indexed op names containing PART, led by `group:KEY` for each op group whose key
or label contains it (`op:tma` offers `group:tma`: TMA is a group, not an op). `group:PART` gives the
group keys, `layout:PART` the indexed layout kinds, `remark:PART` the compiler's remark messages holding it,
`kernel:PART` and `title:PART` kernel names and run titles; a bare word gives both of those last two. Only runs the reader may list are looked at,
for op terms as well (a private run's op names stay private). Each suggestion's `text` replaces the
word whole; the rest of the query is the browser's (static/search-suggest.js).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from sqlalchemy import exists, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app.highlight.hwops import GROUPS
from app.insight.run_search import _like
from app.store.models import Compilation, CompilationTerm, OpTerm, Run

LIMIT = 10
CANDIDATES = 300  # rows read per kind before ranking: the list shows 10, a word like "t" matches thousands
RECENT_RUNS = 1000  # kernel names come from the newest runs: a suggestion must not scan every compilation
MIN_BARE = 2  # a bare word of one letter matches nearly every kernel and title
FIELDS = ("op", "group", "layout", "kernel", "title", "remark")
_WORD = re.compile(r"(?:(?P<field>[A-Za-z]+):)?(?P<value>.*)", re.DOTALL)


@dataclass
class Suggestion:
    text: str  # what replaces the word in the box
    kind: str  # op, group, layout, kernel, title
    label: str = ""  # a group's name; empty for the rest


def parse_word(word: str) -> tuple[str, str]:
    """(field, value) of one word; an unknown field (`foo:x`) is part of a bare word, as in the search."""
    match = _WORD.fullmatch(word.strip())
    field = (match["field"] or "").lower()
    if field not in FIELDS:
        return "", word.strip().strip('"')
    return field, match["value"].strip('"')


def rank(value: str, name: str) -> tuple:
    """Closer matches first: the name (or its part after the dialect) starting with the value, then
    a match starting a word (`async_tma_copy` before `stmatrix` for "tma"), the earliest, the shortest."""
    low, needle = name.lower(), value.lower()
    position = low.find(needle)
    tail = low.rsplit(".", 1)[-1]
    starts_word = any(low.startswith(needle, at + 1) for at, char in enumerate(low) if not char.isalnum())
    return (not (low.startswith(needle) or tail.startswith(needle)), not starts_word, position, len(name), name)


def _ranked(value: str, names, limit: int) -> list[str]:
    return sorted(set(names), key=lambda name: rank(value, name))[:limit]


def _visible_runs(visible: ColumnElement[bool] | None) -> list[ColumnElement[bool]]:
    return [] if visible is None else [visible]


def group_suggestions(value: str) -> list[Suggestion]:
    needle = value.lower()
    found = [group for group in GROUPS if needle in group.key or needle in group.label.lower()]
    found.sort(key=lambda group: (needle not in group.key, rank(value, group.key)))
    return [Suggestion(f"group:{group.key}", "group", group.label) for group in found]


def term_names(session: Session, field: str, value: str, visible: ColumnElement[bool] | None,
               limit: int) -> list[str]:
    """Indexed names of one field (op, layout) containing the value, held by a run the reader may list."""
    needle = value.lstrip("#")
    held = exists().where(CompilationTerm.term_id == OpTerm.id)
    if visible is not None:  # the compilation's run must be listable (without tokens: any that holds it)
        held = exists().where(
            CompilationTerm.term_id == OpTerm.id,
            Compilation.pk == CompilationTerm.compilation_pk,
            Run.id == Compilation.run_id,
            visible,
        )
    names = session.scalars(
        select(OpTerm.name)
        .where(OpTerm.name.ilike(f"{field}:" + _like(needle), escape="\\"), held)
        .order_by(OpTerm.name)
        .limit(CANDIDATES)
    )
    values = [name.split(":", 1)[1] for name in names]
    return _ranked(needle, values, limit)


def kernel_names(session: Session, value: str, visible: ColumnElement[bool] | None, limit: int) -> list[str]:
    recent = select(Run.id).where(*_visible_runs(visible)).order_by(Run.created_at.desc()).limit(RECENT_RUNS)
    names = session.scalars(
        select(Compilation.kernel)
        .where(Compilation.run_id.in_(recent), Compilation.kernel.ilike(_like(value), escape="\\"))
        .distinct()
        .limit(CANDIDATES)
    )
    return _ranked(value, [name for name in names if name], limit)


def run_titles(session: Session, value: str, visible: ColumnElement[bool] | None, limit: int) -> list[str]:
    titles = session.scalars(
        select(Run.title)
        .where(Run.title.ilike(_like(value), escape="\\"), *_visible_runs(visible))
        .order_by(Run.created_at.desc())
        .limit(CANDIDATES)
    )
    # A title holding a double quote cannot be written as one `title:"..."` word.
    return _ranked(value, [title for title in titles if title and '"' not in title], limit)


def _title_word(title: str) -> str:
    return f'title:"{title}"' if any(char.isspace() for char in title) else f"title:{title}"


def suggest(session: Session, word: str, visible: ColumnElement[bool] | None = None, limit: int = LIMIT) -> dict:
    """The ranked completions of one word, as the .json twin gives them."""
    field, value = parse_word(word)
    found: list[Suggestion] = []
    if field == "op":
        if value:
            found += group_suggestions(value)
        found += [Suggestion(f"op:{name}", "op") for name in term_names(session, "op", value, visible, limit)]
    elif field == "group":
        found += group_suggestions(value)
    elif field == "remark":
        from app.insight.remark_search import remark_messages  # remark_search imports run_search too
        found += [Suggestion(f'remark:"{message}"' if any(c.isspace() for c in message) else f"remark:{message}",
                             "remark") for message in remark_messages(session, value, visible, limit)
                  if '"' not in message]
    elif field == "layout":
        found += [Suggestion(f"layout:{name}", "layout") for name in term_names(session, "layout", value, visible, limit)]
    elif field == "kernel" or (not field and len(value) >= MIN_BARE):
        found += [Suggestion(f"kernel:{name}", "kernel") for name in kernel_names(session, value, visible, limit)]
    if field == "title" or (not field and len(value) >= MIN_BARE):
        found += [Suggestion(_title_word(title), "title") for title in run_titles(session, value, visible, limit)]
    if not field:  # kernels and titles together, by how well each matches
        found.sort(key=lambda item: rank(value, item.text.split(":", 1)[1].strip('"')))
    return {"q": word, "field": field, "value": value, "suggestions": [asdict(item) for item in found[:limit]]}


__all__ = ["FIELDS", "LIMIT", "Suggestion", "parse_word", "rank", "suggest"]
