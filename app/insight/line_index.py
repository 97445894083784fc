"""Stored Python-line indexes of blobs, so the map page need not read a compilation's IR texts.

Each (blob, reading context) gets one row: the located IR lines per Python file, and, packed
(see :func:`_pack`), the IR lines of each Python line. Rows are shared by every run holding the
blob. The indexes computed together (a compilation's new ones) are stored as one zstd frame, a
`line_index_packs` row, that each row points into: successive passes' indexes are near copies. :func:`index_run` fills them right after ingest; the map page fills
what is missing (runs ingested before) on its first visit through :func:`indexes_for`.

How a snapshot's text is read follows its snapshot page: MLIR and assembly by their own
locations (:func:`app.render.source_index`); an LLVM dump by ``!dbg`` node, each node resolved
once in the metadata table (its own, or for a function-scope dump the compilation's latest
earlier LLVM dump that has one).
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Sequence
from itertools import accumulate

import zstandard
from sqlalchemy import bindparam, insert, select
from sqlalchemy.orm import Session

from app import foreground, render
from app.render.loc_transfer import transfer
from app.store.blobs import decompress, insert_ignoring
from app.store.models import Compilation, LineIndex, LineIndexPack, Snapshot
from parsers.locations.loc import LlvmLocations, llvm_by_node_applies, llvm_lines_by_node, llvm_node_counts

FACTS = "facts"
_HAS_METADATA, _NEEDS_METADATA, _BY_NODE = 1, 2, 4
_HAS_LOCS, _LACKS_LOCS = 8, 16  # a per-pass folder's MLIR text with locations, or printed without
_NO_TABLE = LlvmLocations("")
_TABLES = render.SizedLRU(max_bytes=64 << 20, max_items=64)  # metadata digest -> LlvmLocations
PACK_LEVEL = 12  # a compilation's indexes in 0.1-0.5 ms; level 19 is 5% smaller at 7x the time


class Entry:
    """One stored index: located IR lines per file, and the packed per-line table, unpacked on
    the first question (one Entry per row: snapshots of the same text share it)."""

    def __init__(self, files: dict[str, int], keys: list[int], names: list[str], numbers: bytes) -> None:
        self.files = files
        self._packed = (keys, names, numbers)
        self._deltas: dict[tuple[str, int], tuple[int, int, array]] | None = None

    @classmethod
    def of(cls, raw: bytes) -> Entry:
        """An index as :func:`_pack` made it."""
        if not raw:
            return cls({}, [], [], b"")
        header_size = int.from_bytes(raw[:4], "little")
        files, names, keys, typecode = json.loads(raw[4 : 4 + header_size])
        return cls(files, keys, names, typecode.encode() + raw[4 + header_size :])

    def lines(self, file: str, line: int) -> list[int]:
        """The 1-based IR lines of Python ``file:line``."""
        if self._deltas is None:
            self._deltas = _unpack(*self._packed)
        found = self._deltas.get((file, line))
        if found is None:
            return []
        start, count, numbers = found
        return list(accumulate(numbers[start : start + count]))


def _unpack(keys: list[int], names: list[str], numbers: bytes) -> dict[tuple[str, int], tuple[int, int, array]]:
    """(file, line) -> (start, count, deltas): only the small header is walked here."""
    if not keys:
        return {}
    deltas = array(numbers[:1].decode())
    deltas.frombytes(numbers[1:])
    if sys.byteorder != "little":
        deltas.byteswap()
    found: dict[tuple[str, int], tuple[int, int, array]] = {}
    start, previous_file, line = 0, -1, 0
    for i in range(0, len(keys), 3):
        file, step, count = keys[i : i + 3]
        line = step if file != previous_file else line + step
        previous_file = file
        found[(names[file], line)] = (start, count, deltas)
        start += count
    return found


def _pack(files: dict[str, int], by_source: dict[tuple[str, int], list[int]]) -> bytes:
    """Header size (4 bytes); a JSON header ``[files, names, keys, typecode]``:
    the located IR lines per file, the files the keys name, and per (file, line) key, sorted, the
    file's place in names, the line (less the previous key's line of the same file) and how many IR
    lines it has; then every key's IR lines as deltas in key order, little-endian uint16 (typecode
    "H") or uint32 ("I") where a delta needs it. One line is found without the rest."""
    if not files and not by_source:
        return b""
    names = sorted({file for file, _ in by_source})
    place = {name: i for i, name in enumerate(names)}
    keys: list[int] = []
    deltas: list[int] = []
    previous_file, previous_line = -1, 0
    for (file, line), lines in sorted(by_source.items()):
        index = place[file]
        keys += (index, line - previous_line if index == previous_file else line, len(lines))
        previous_file, previous_line = index, line
        previous = 0
        for number in lines:
            deltas.append(number - previous)
            previous = number
    typecode = "H" if max(deltas, default=0) < 1 << 16 else "I"
    numbers = array(typecode, deltas)
    if sys.byteorder != "little":
        numbers.byteswap()
    header = json.dumps([files, names, keys, typecode], separators=(",", ":")).encode()
    return len(header).to_bytes(4, "little") + header + numbers.tobytes()


def _context(kind: str, flags: int, digest: str, metadata: str | None, located: str | None = None) -> str:
    """How an LLVM text (or another kind) is read: see the module's docstring."""
    if kind != "llvm":
        return f"mlir@{located}" if flags & _LACKS_LOCS and located else kind
    if flags & _BY_NODE:
        table = digest if flags & _HAS_METADATA else metadata if flags & _NEEDS_METADATA else None
        return f"llvm@{table or ''}"
    return "llvm"


class _Row:
    """A `line_indexes` row as read or made here (plain attributes: a page reads hundreds)."""

    __slots__ = ("blob_id", "context", "flags", "pack", "raw", "size", "start")

    def __init__(self, blob_id: int, context: str, flags: int, pack: int | None, start: int, size: int,
                 raw: bytes | None = None) -> None:
        self.blob_id, self.context, self.flags = blob_id, context, flags
        self.pack, self.start, self.size = pack, start, size
        self.raw = raw  # the index, for a row made here


_COLUMNS = ("blob_id", "context", "flags", "pack", "start", "size")
_ROWS = select(*(getattr(LineIndex, name) for name in _COLUMNS)).where(
    LineIndex.blob_id.in_(bindparam("blobs", expanding=True)))
_PACK_ROWS = select(LineIndexPack.pk, LineIndexPack.data).where(LineIndexPack.pk.in_(bindparam("pks", expanding=True)))


def indexes_for(session: Session, snapshots: Sequence[Snapshot], *, store: bool = True) -> list[Entry]:
    """The stored index of each snapshot (compilation order), computing and storing what lacks."""
    blobs = sorted({snapshot.blob_id for snapshot in snapshots})
    rows: dict[tuple[int, str], _Row] = {}
    for start in range(0, len(blobs), 500):
        for values in session.execute(_ROWS, {"blobs": blobs[start : start + 500]}):
            rows[(values[0], values[1])] = _Row(*values)
    packs = _packs(session, {row.pack for row in rows.values() if row.pack is not None})
    added: list[_Row] = []
    entries: list[Entry] = []
    shared: dict[int, Entry] = {}
    metadata: str | None = None  # the latest LLVM dump with a metadata table so far
    located: tuple[int, str] | None = None  # (compilation, blob) of a compilation's first snapshot with loc()
    for snapshot in snapshots:
        kind = render.snapshot_kind(snapshot.kind)
        text: str | None = None  # read at most once per snapshot, and only when something lacks
        flags = 0
        if kind == "llvm":
            facts = rows.get((snapshot.blob_id, FACTS))
            if facts is None:
                text = _text(session, snapshot.blob)
                facts = rows[(snapshot.blob_id, FACTS)] = _Row(snapshot.blob_id, FACTS, _facts(text), None, 0, 0)
                added.append(facts)
            flags = facts.flags
        elif snapshot.stage == "mlir" and (snapshot.index == 0 or located and located[0] == snapshot.compilation_pk):
            # a per-pass folder's (or generic pipeline's) MLIR text: its first snapshot's locations, if it
            # has any, lend theirs to the texts printed without (app/render/loc_transfer.py)
            facts = rows.get((snapshot.blob_id, FACTS))
            if facts is None:
                text = _text(session, snapshot.blob)
                facts = rows[(snapshot.blob_id, FACTS)] = _Row(snapshot.blob_id, FACTS, _mlir_facts(text), None, 0, 0)
                added.append(facts)
            flags = facts.flags
        if snapshot.index == 0:
            located = (snapshot.compilation_pk, snapshot.blob) if flags & _HAS_LOCS else None
        donor = located[1] if located and located[0] == snapshot.compilation_pk and snapshot.index else None
        context = _context(kind, flags, snapshot.blob, metadata, donor)
        if flags & _HAS_METADATA and snapshot.kind == "llvm":
            metadata = snapshot.blob
        row = rows.get((snapshot.blob_id, context))
        if row is None or (row.pack is not None and row.pack not in packs):  # a lost pack: made again
            foreground.give_way()  # before this call's rows are written (they are, below, all at once)
            raw = _compute(session, snapshot.blob, text if text is not None else _text(session, snapshot.blob), context)
            row = rows[(snapshot.blob_id, context)] = _Row(snapshot.blob_id, context, 0, None, 0, len(raw), raw)
            added.append(row)
        entry = shared.get(id(row))
        if entry is None:
            raw = row.raw if row.raw is not None else (
                packs[row.pack][row.start : row.start + row.size] if row.pack is not None else b"")
            entry = shared[id(row)] = Entry.of(raw)
        entries.append(entry)
    if added and store:
        _store(session, added)
    return entries


def _packs(session: Session, pks: set[int]) -> dict[int, bytes]:
    """The raw bytes of these packs (those that exist; a compilation's take well under a ms)."""
    found: dict[int, bytes] = {}
    ordered = sorted(pks)
    for start in range(0, len(ordered), 500):
        rows = session.execute(_PACK_ROWS, {"pks": ordered[start : start + 500]})
        found.update((pk, decompress(bytes(data))) for pk, data in rows)
    return found


def _store(session: Session, added: list[_Row]) -> None:
    """The new rows, their indexes in one new pack (a row another session stored meanwhile is kept,
    as is a lost pack's row: it is made again on its next read)."""
    offset, parts = 0, []
    for row in added:
        if row.raw:
            row.start, row.size = offset, len(row.raw)
            parts.append(row.raw)
            offset += len(row.raw)
    if parts:
        data = zstandard.ZstdCompressor(level=PACK_LEVEL).compress(b"".join(parts))
        pack = session.scalar(insert(LineIndexPack).values(data=data).returning(LineIndexPack.pk))
        for row in added:
            if row.raw:
                row.pack = pack
    values = [{name: getattr(row, name) for name in _COLUMNS} for row in added]
    # A background prep and a map visit may index the same blob at once: the first row stands.
    session.execute(insert_ignoring(session, LineIndex, ("blob_id", "context")), values)


def index_run(session: Session, run_id: str) -> None:
    """Compute and store the indexes a run's map pages need (those of blobs seen before are kept),
    committing each compilation's: background work gives way to page requests between texts
    (app/foreground.py), and must hold no write lock while it waits."""
    compilations = session.scalars(select(Compilation).where(Compilation.run_id == run_id)).all()
    for compilation in compilations:
        indexes_for(session, list(compilation.snapshots))
        session.commit()


def _text(session: Session, digest: str) -> str:
    return render.blob_reader.text(session, digest) or ""


def _facts(text: str) -> int:
    has_metadata = render.has_debug_info(text)
    flags = _HAS_METADATA if has_metadata else 0
    if not has_metadata and render.needs_debug_info(text):
        flags |= _NEEDS_METADATA
    if llvm_by_node_applies(text):
        flags |= _BY_NODE
    return flags


def _mlir_facts(text: str) -> int:
    return _HAS_LOCS if render.has_locations(text) else _LACKS_LOCS if render.lacks_locations(text) else 0


def _compute(session: Session, digest: str, text: str, context: str) -> bytes:
    if context.startswith("mlir@"):
        files, by_source = _transferred(text, _text(session, context[len("mlir@") :]))
    elif context.startswith("llvm@"):
        metadata = context[len("llvm@") :]
        files, by_source = _by_node(text, _table(session, metadata, text if metadata == digest else None))
    else:
        found = render.source_index(digest, context, lambda: text)
        files, by_source = dict(found.files), dict(found.by_source)
    ordered = dict(sorted(files.items(), key=lambda item: -item[1]))
    return _pack(ordered, by_source)


def _transferred(text: str, donor: str) -> tuple[dict[str, int], dict[tuple[str, int], list[int]]]:
    """Located lines per file and (file, line) -> 1-based IR lines of a text without locations, its
    ops lined up with the donor's (app/render/loc_transfer.py)."""
    files: dict[str, int] = {}
    by_source: dict[tuple[str, int], list[int]] = {}
    for number, locs in enumerate(transfer(donor, text), start=1):
        if locs.primary is not None:
            files[locs.primary.file] = files.get(locs.primary.file, 0) + 1
            by_source.setdefault((locs.primary.file, locs.primary.line), []).append(number)
    return files, by_source


def _table(session: Session, digest: str, text: str | None) -> LlvmLocations:
    if not digest:
        return _NO_TABLE  # no metadata anywhere: LLVM's location comments, if any
    table = _TABLES.get((digest,))
    if table is None:
        table = LlvmLocations(text if text is not None else _text(session, digest))
        _TABLES.put((digest,), table, table.size)
    return table


def _by_node(text: str, table: LlvmLocations) -> tuple[dict[str, int], dict[tuple[str, int], list[int]]]:
    """Located references per file, and (file, line) -> IR lines, of an LLVM dump counted by
    node (as app.insight.source_map did per request): a Python line's IR lines are those that reference a
    node whose primary location (with any of its location comments) is that line."""
    files: dict[str, int] = {}
    keys: dict[tuple[str, int], set[str]] = {}
    for (node, comment), count in llvm_node_counts(text).items():  # counted in C
        primary = table.primary(node, comment)
        if primary is not None:
            files[primary.file] = files.get(primary.file, 0) + count
            keys.setdefault((primary.file, primary.line), set()).add(node)
    if not keys:
        return files, {}
    node_lines = llvm_lines_by_node(text)
    by_source: dict[tuple[str, int], list[int]] = {}
    for key, nodes in keys.items():
        if len(nodes) == 1:
            by_source[key] = node_lines[next(iter(nodes))]
        else:
            by_source[key] = sorted({number for node in nodes for number in node_lines[node]})
    return files, by_source


def clear() -> None:
    with _TABLES.lock:
        _TABLES.items.clear()
        _TABLES.bytes = 0
