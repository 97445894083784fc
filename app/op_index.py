"""The op index: for every compilation, the first and last snapshot holding each op name, op group
and layout kind, so `op:`, `group:` and `layout:` searches need no IR text at query time.

Terms are strings: ``op:tt.load``, ``group:tma`` (app/highlight/hwops.py GROUPS), ``layout:blocked``
(the attribute's mnemonic: ``#ttg.blocked<...>`` gives ``blocked``). A blob's term set is computed
once per ingest (identical snapshots share it), then each compilation's snapshots are walked in
order to record first and last indexes. Term names live once in `op_terms`; `compilation_terms`
holds four integers per (compilation, term).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.blobs import BlobReader, insert_rows
from app.highlight.hwops import descriptor_group, inline_asm_groups, op_group, text_target
from app.models import Compilation, CompilationTerm, OpTerm, Run, Snapshot

VERSION = 1  # recorded in Run.stats["op_index"]; a run without it is indexed by `irlens index --backfill`
_BATCH = 5000
MAX_NAME = 200  # longer op names (junk, not IR) are not indexed: op_terms.name holds 500 characters

# An op at the op position of a line: after optional results (`%a, %b:2 = `), maybe quoted (generic
# form). A name has a dot: `tt.load`, `scf.for`, `llvm.call_intrinsic`. The leading `\n` is a literal
# prefix, which lets the regex engine jump from line to line (3x faster than a MULTILINE `^`); the
# possessive quantifiers never backtrack, and MLIR's printer indents with spaces and writes ` = `.
OP_AT = rb' *+(?:%[^\n=]*+= )?+"?+([a-z_][\w$]*+\.[\w$.]*+)'
OP = re.compile(rb"\n" + OP_AT)
FIRST_OP = re.compile(OP_AT)
# llvm.call_intrinsic "llvm.x.y": the intrinsic decides its op group (TMA, MMA, barrier...).
_INTRINSIC = re.compile(rb'\n[ \t]*(?:%[^\n=]*=[ \t]*)?llvm\.call_intrinsic[ \t]+"(llvm\.[\w.]+)"')
# A layout attribute, defined as an alias or written inline: #ttg.blocked<...>, #ttg.nvidia_mma<...>.
_LAYOUT = re.compile(rb"#(?:ttg|triton_gpu|ttng|triton_nvidia_gpu|amdg|amdgpu|triton_amdgpu)\.(\w+)<")
# Old and new spellings of one dialect: a query for either finds both.
_DIALECT_ALIASES = (
    ("ttg.", "triton_gpu."), ("ttng.", "triton_nvidia_gpu."), ("amdg.", "amdgpu."), ("nvg.", "nvgpu."),
)


def blob_terms(body: bytes) -> frozenset[str]:
    """Every term one IR text holds."""
    names = set(OP.findall(body))
    first = FIRST_OP.match(body)
    if first is not None:
        names.add(first.group(1))
    ops = [op for op in (name.rstrip(b".").decode("ascii") for name in names) if "." in op and len(op) <= MAX_NAME]
    terms = {"op:" + name for name in ops}
    for name in ops:
        group = op_group(name)
        if group:
            terms.add("group:" + group)
    if "llvm.call_intrinsic" in ops:
        for intrinsic in set(_INTRINSIC.findall(b"\n" + body)):
            group = op_group('llvm.call_intrinsic "' + intrinsic.decode("ascii") + '"')
            if group:
                terms.add("group:" + group)
    if b"asm" in body or "group:descriptor" in terms:  # as count_groups does: PTX in inline
        text = body.decode("utf-8", "replace")  # assembly, descriptor ops by the module's own target
        terms.update("group:" + group for group in inline_asm_groups(text))
        if "group:descriptor" in terms:
            group = descriptor_group(text_target(text))
            if group != "descriptor":
                terms.discard("group:descriptor")
                terms.add("group:" + group)
    terms.update("layout:" + kind.decode("ascii") for kind in set(_LAYOUT.findall(body)) if len(kind) <= MAX_NAME)
    return frozenset(terms)


def first_last(snapshots: Iterable[tuple[int, frozenset[str]]]) -> dict[str, tuple[int, int]]:
    """(index, terms) in snapshot order -> term -> (first index, last index). Runs of snapshots
    with one term set (unchanged passes) are applied once."""
    found: dict[str, tuple[int, int]] = {}
    current: frozenset[str] | None = None
    start = end = -1

    def close() -> None:
        for term in current or ():
            first = found.get(term)
            found[term] = (first[0] if first else start, end)

    for index, terms in snapshots:
        if terms is not current:
            close()
            current, start = terms, index
        end = index
    close()
    return found


class TermIds:
    """Term name -> id in `op_terms`, inserting the new ones (another ingest may insert the same
    name meanwhile: the insert skips it and the id is read back)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ids: dict[str, int] = {}

    def resolve(self, names: Iterable[str]) -> dict[str, int]:
        missing = sorted(set(names) - self.ids.keys())
        if missing:
            self._load(missing)
            new = [(name,) for name in missing if name not in self.ids]
            if new:
                insert_rows(self.session, OpTerm.__table__, ("name",), new, ignore_conflict_on="name")
                self._load([name for (name,) in new])
        return self.ids

    def _load(self, names: list[str]) -> None:
        for start in range(0, len(names), 500):
            chunk = names[start:start + 500]
            rows = self.session.execute(select(OpTerm.name, OpTerm.id).where(OpTerm.name.in_(chunk)))
            self.ids.update((name, term_id) for name, term_id in rows)


class OpIndex:
    """Collects blob term sets during an ingest and writes each compilation's first/last rows."""

    def __init__(self) -> None:
        self.terms: dict[str, frozenset[str]] = {}  # blob hash -> its terms
        self._sets: dict[frozenset[str], frozenset[str]] = {}  # one object per distinct set

    def add_blob(self, digest: str, body: bytes) -> None:
        if digest not in self.terms:
            terms = blob_terms(body)
            self.terms[digest] = self._sets.setdefault(terms, terms)

    def write(self, session: Session, run: Run, compilations: Iterable[tuple[int, Sequence, str | None]]) -> None:
        """`compilations`: (compilation pk, snapshot records with .index and .blob, its target)."""
        ids = TermIds(session)
        ids.resolve(set().union(*self._sets) if self._sets else ())
        empty: frozenset[str] = frozenset()
        rows: list[tuple] = []
        for pk, snapshots, target in compilations:
            found = retarget_terms(first_last((s.index, self.terms.get(s.blob, empty)) for s in snapshots), target)
            ids.resolve(found)
            rows.extend((pk, ids.ids[term], first, last) for term, (first, last) in found.items())
            if len(rows) >= _BATCH:
                insert_rows(session, CompilationTerm.__table__, _COLUMNS, rows)
                rows = []
        insert_rows(session, CompilationTerm.__table__, _COLUMNS, rows)
        run.stats = {**(run.stats or {}), "op_index": VERSION}


_COLUMNS = ("compilation_pk", "term_id", "first_index", "last_index")


def retarget_terms(found: dict[str, tuple[int, int]], target: str | None) -> dict[str, tuple[int, int]]:
    """Descriptor ops of snapshots that name no target (TTIR) count for the compilation's engine
    (TMA, TDM), as on the compilation page (hwops.retarget)."""
    span = found.get("group:descriptor")
    group = descriptor_group(target)
    if span is None or group == "descriptor":
        return found
    moved = {term: value for term, value in found.items() if term != "group:descriptor"}
    other = moved.get("group:" + group)
    moved["group:" + group] = (min(span[0], other[0]), max(span[1], other[1])) if other else span
    return moved


def query_names(field: str, value: str) -> list[str]:
    """The stored term names a search word stands for: `op:ttg.x` also finds `triton_gpu.x`."""
    value = value.strip()
    if field == "op":
        names = {value}
        for new, old in _DIALECT_ALIASES:
            if value.startswith(new):
                names.add(old + value[len(new):])
            elif value.startswith(old):
                names.add(new + value[len(old):])
        return sorted("op:" + name for name in names)
    if field == "group":
        return ["group:" + value.lower()]
    kind = value.lstrip("#")
    kind = kind.rsplit(".", 1)[-1].split("<", 1)[0]  # `#ttg.linear<...>` and `ttg.linear` mean `linear`
    return ["layout:" + kind]


# -- runs ingested before the index ----------------------------------------------------------------


def unindexed_runs(session: Session) -> list[str]:
    marker = func.coalesce(Run.stats["op_index"].as_integer(), 0)
    return list(session.scalars(select(Run.id).where(marker < VERSION).order_by(Run.created_at)))


def index_run(session: Session, run_id: str, reader: BlobReader | None = None) -> int:
    """(Re)build one run's index from its stored snapshots; returns its rows' count."""
    reader = reader or BlobReader()
    run = session.get(Run, run_id)
    targets = dict(session.execute(select(Compilation.pk, Compilation.target).where(Compilation.run_id == run_id)).all())
    pks = list(targets)
    if pks:
        session.execute(CompilationTerm.__table__.delete().where(CompilationTerm.compilation_pk.in_(pks)))
    index = OpIndex()
    compilations = []
    for pk in pks:
        snapshots = list(session.execute(
            select(Snapshot.index, Snapshot.blob).where(Snapshot.compilation_pk == pk).order_by(Snapshot.index)
        ))
        for snapshot in snapshots:
            if snapshot.blob not in index.terms:
                index.add_blob(snapshot.blob, reader.get(session, snapshot.blob) or b"")
        compilations.append((pk, snapshots, targets[pk]))
    index.write(session, run, compilations)
    return session.scalar(
        select(func.count()).select_from(CompilationTerm).where(CompilationTerm.compilation_pk.in_(pks))
    ) if pks else 0


def backfill(session_factory: Callable[[], Session], progress: Callable[[int, int, str], None]) -> int:
    """Index every run that lacks it, one transaction per run (an interrupted backfill resumes)."""
    with session_factory() as session:
        pending = unindexed_runs(session)
    reader = BlobReader()
    for done, run_id in enumerate(pending, start=1):
        with session_factory() as session:
            index_run(session, run_id, reader)
            session.commit()
        progress(done, len(pending), run_id)
    return len(pending)
