"""The op index: for every compilation, the first and last snapshot holding each op name, op group
and layout kind, so `op:`, `group:` and `layout:` searches need no IR text at query time.

Terms are strings: ``op:tt.load``, ``group:tma`` (app/highlight/hwops.py GROUPS), ``layout:blocked``
(the attribute's mnemonic: ``#ttg.blocked<...>`` gives ``blocked``). A blob's term set is computed
once per ingest (identical snapshots share it), then each compilation's snapshots are walked in
order to record first and last indexes. Term names live once in `op_terms`; `compilation_terms`
holds four integers per (compilation, term).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.highlight.hwops import descriptor_group
from app.insight.op_term_scan import TermScanner
from app.insight.op_terms import blob_terms
from app.store.blobs import BlobReader, insert_rows
from app.store.models import Compilation, CompilationTerm, OpTerm, Run, Snapshot

VERSION = 1  # recorded in Run.stats["op_index"]; a run without it is indexed by `irlens index --backfill`
_BATCH = 5000

# Old and new spellings of one dialect: a query for either finds both.
_DIALECT_ALIASES = (
    ("ttg.", "triton_gpu."), ("ttng.", "triton_nvidia_gpu."), ("amdg.", "amdgpu."), ("nvg.", "nvgpu."),
)


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

    def __init__(self, scanner: TermScanner | None = None) -> None:
        """`scanner`: texts are scanned by it (a helper process) rather than as they are added."""
        self.terms: dict[str, frozenset[str]] = {}  # blob hash -> its terms
        self._sets: dict[frozenset[str], frozenset[str]] = {}  # one object per distinct set
        self.scanner = scanner
        self._queued: set[str] = set()  # handed to the scanner

    def add_blob(self, digest: str, body: bytes, terms: frozenset[str] | None = None) -> None:
        """`terms`: the body's, when they were found elsewhere already (app/ingest/log_prescan.py)."""
        if terms is not None:  # (then there is no scanner: the log helper finds them all)
            if digest not in self.terms:
                self.terms[digest] = self._sets.setdefault(terms, terms)
        elif self.scanner is not None:
            if digest not in self._queued:
                self._queued.add(digest)
                self.scanner.add(digest, body)
        elif digest not in self.terms:
            terms = blob_terms(body)
            self.terms[digest] = self._sets.setdefault(terms, terms)

    def close(self) -> None:
        if self.scanner is not None:
            self.scanner.close()

    def _collect(self) -> None:
        if self.scanner is not None:
            for digest, terms in self.scanner.finish().items():
                self.terms[digest] = self._sets.setdefault(terms, terms)
            self.scanner = None

    def write(self, session: Session, run: Run, compilations: Iterable[tuple[int, Iterable, str | None]]) -> None:
        """`compilations`: (compilation pk, (index, blob) of each snapshot in order, its target)."""
        self._collect()
        ids = TermIds(session)
        ids.resolve(set().union(*self._sets) if self._sets else ())
        empty: frozenset[str] = frozenset()
        rows: list[tuple] = []
        for pk, snapshots, target in compilations:
            found = retarget_terms(first_last((index, self.terms.get(blob, empty)) for index, blob in snapshots), target)
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
