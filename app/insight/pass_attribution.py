"""Which pass made a change: the one answer every page gives when it names a pass.

With MLIR_ENABLE_DUMP every dump is printed *before* its pass, so what first shows in the dump
"before X" was made by the pass that ran just before X: the pass of the previous dump of the same
scope (its base). A dump printed *after* X shows X's work. An op already in a scope's first dump
came from the front end (no pass). The software pipeliner's internal dumps ("After: ExpandLoops")
are steps inside TritonGPUPipeline, and more of it runs after the last one, so a change that first
shows after them is credited to the pass around them. One rule here, so first seen, op search, op
history, the per-pass charts and diff titles never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.store.models import Banner, Snapshot


@dataclass(frozen=True)
class Dump:
    when: str | None  # "before" | "after"
    pass_name: str | None
    kind: str | None  # "mlir" | "internal" | "llvm"
    base: int | None  # index of the previous dump of the same scope


def pass_that_ran(dumps: Mapping[int, Dump], index: int) -> str | None:
    """The pass whose work dump ``index`` is the first to show (None: the front end's IR)."""
    dump = dumps[index]
    if dump.when == "after":
        return dump.pass_name
    base, seen = dump.base, set()
    while base is not None and base in dumps and dumps[base].kind == "internal" and base not in seen:
        seen.add(base)
        base = dumps[base].base  # a pipeliner step: the pass around it (its own base) made the rest
    return dumps[base].pass_name if base is not None and base in dumps else None


def attribute_rows(rows: list[dict]) -> None:
    """Set each page row's ``made_by`` (rows are snapshot_dict results of one compilation)."""
    dumps = {row["index"]: Dump(row["when"], row["pass"], row["kind"], row.get("base")) for row in rows}
    for row in rows:
        row["made_by"] = pass_that_ran(dumps, row["index"])


def _rows(session: Session, pks: list[int], keys: set[tuple[int, int]] | None = None) -> list:
    """Banner rows of these compilations' snapshots: all of them, or only the (pk, index) ``keys``."""
    rows = []
    for start in range(0, len(pks), 200):
        statement = (
            select(Snapshot.compilation_pk, Snapshot.index, Snapshot.base_index, Banner.pass_name, Banner.when,
                   Banner.kind)
            .join(Snapshot.banner)
            .where(Snapshot.compilation_pk.in_(pks[start:start + 200]))
        )
        if keys is not None:
            statement = statement.where(Snapshot.index.in_(sorted({index for _, index in keys})))
        rows += [row for row in session.execute(statement)
                 if keys is None or (row.compilation_pk, row.index) in keys]
    return rows


def _load(session: Session, pks: list[int], wanted: set[tuple[int, int]] | None) -> dict[int, dict[int, Dump]]:
    """The dumps ``pass_that_ran`` needs: every one of the compilations, or the wanted ones and the
    chain of bases behind each (a round per link: a base, and past a pipeliner step its own base)."""
    by_compilation: dict[int, dict[int, Dump]] = {}
    keys = wanted
    while keys is None or keys:
        for row in _rows(session, sorted({pk for pk, _ in keys}) if keys is not None else pks, keys):
            by_compilation.setdefault(row.compilation_pk, {})[row.index] = Dump(
                row.when, row.pass_name, row.kind, row.base_index)
        if keys is None:
            break
        loaded = {(pk, index) for pk, dumps in by_compilation.items() for index in dumps}
        keys = {(pk, dump.base) for pk, index in keys if (dump := by_compilation.get(pk, {}).get(index))
                and dump.base is not None and (dump.kind == "internal" or (pk, index) in wanted)} - loaded
    return by_compilation


def dump_passes(session: Session, compilation_pks: Iterable[int],
                wanted: set[tuple[int, int]] | None = None) -> dict[tuple[int, int], dict]:
    """By (compilation pk, index), for the ``wanted`` snapshots (all when None) of these
    compilations: the dump's own ``pass`` and ``when``, and ``introduced_by``, the pass whose work
    it first shows. With ``wanted``, reads only those dumps and their chains of bases."""
    by_compilation = _load(session, sorted(set(compilation_pks)), wanted)
    found = {}
    for pk, dumps in by_compilation.items():
        for index in dumps:
            if wanted is None or (pk, index) in wanted:
                dump = dumps[index]
                found[(pk, index)] = {"pass": dump.pass_name, "when": dump.when,
                                      "introduced_by": pass_that_ran(dumps, index)}
    return found
