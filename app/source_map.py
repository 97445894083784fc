"""Per-pass source indexes for the map page: which IR lines of each snapshot map to which Python lines.

A compilation with LLVM dumps has hundreds of snapshots of thousands of lines each, and the map
page needs all of them on its first visit. MLIR and assembly snapshots use the renderer's index
(:func:`app.render.source_index`, cached by blob hash). LLVM dumps are counted per ``!dbg`` node
instead of resolved line by line: each node's primary location is looked up once in the
metadata table, a regex counts the references, and line numbers are found only for the nodes
of the Python line asked for. A function-scope dump prints no metadata; like the snapshot page,
it is read against the compilation's latest earlier LLVM dump that has it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from app import render
from app.models import Snapshot
from parsers.loc import LlvmLocations, llvm_by_node_applies, llvm_node_counts, llvm_node_lines

_NODES = render._SizedLRU(max_bytes=64 << 20, max_items=8192)  # (digest, metadata digest) -> _ByNode
_TABLES = render._SizedLRU(max_bytes=64 << 20, max_items=256)  # metadata digest -> LlvmLocations
_FACTS = render._SizedLRU(max_bytes=4 << 20, max_items=65536)  # digest -> (has metadata, by node?)
_NO_TABLE = LlvmLocations("")


@dataclass
class PassIndex:
    """One snapshot's index: located IR lines per primary file, and the IR lines of one Python line."""

    files: dict[str, int]
    lines: Callable[[str, int], list[int]]  # (recorded file, Python line) -> 1-based IR lines
    text: render.TextLoader  # the snapshot's text (read anew each call: a page holds none of them)


@dataclass
class _ByNode:
    files: dict[str, int]
    nodes: dict[tuple[str, int], set[str]] = field(default_factory=dict)  # (file, line) -> nodes
    size: int = 0


def pass_indexes(session: Session, snapshots: Iterable[Snapshot]) -> list[PassIndex]:
    """The index of each snapshot, in order (``snapshots`` in compilation order)."""
    indexes: list[PassIndex] = []
    metadata_digest: str | None = None  # the latest LLVM dump with a metadata table so far
    for snapshot in snapshots:
        kind = render.snapshot_kind(snapshot.kind)
        plain = _loader(session, snapshot.blob)
        load = _once(plain)  # for building this index only: a request holds one text at a time
        index = None
        if kind == "llvm":
            has_metadata, needs_metadata, by_node = _facts(snapshot.blob, load)
            if by_node:
                table = snapshot.blob if has_metadata else metadata_digest if needs_metadata else None
                index = _llvm_index(session, snapshot.blob, load, plain, table)
            if has_metadata and snapshot.kind == "llvm":
                metadata_digest = snapshot.blob
        if index is None:
            found = render.source_index(snapshot.blob, kind, load)
            index = PassIndex(found.files, lambda file, line, found=found: found.by_source.get((file, line), []), plain)
        indexes.append(index)
    return indexes


def _loader(session: Session, digest: str) -> render.TextLoader:
    return lambda: render.blob_reader.text(session, digest) or ""


def _once(load: render.TextLoader) -> render.TextLoader:
    """``load``, reading the text on first use and keeping it while the caller keeps this."""
    held: list[str] = []

    def once() -> str:
        if not held:
            held.append(load() or "")
        return held[0]

    return once


def _facts(digest: str, load: render.TextLoader) -> tuple[bool, bool, bool]:
    """(defines metadata, references metadata it lacks, can be counted by node) of an LLVM text."""
    cached = _FACTS.get((digest,))
    if cached is None:
        text = load() or ""
        has_metadata = render.has_debug_info(text)
        cached = (has_metadata, not has_metadata and render.needs_debug_info(text), llvm_by_node_applies(text))
        _FACTS.put((digest,), cached, 64)
    return cached


def _table(session: Session, digest: str, load: render.TextLoader | None = None) -> LlvmLocations:
    table = _TABLES.get((digest,))
    if table is None:
        table = LlvmLocations(load() if load else render.blob_reader.text(session, digest) or "")
        _TABLES.put((digest,), table, table.size)
    return table


def _llvm_index(
    session: Session, digest: str, load: render.TextLoader, plain: render.TextLoader, metadata_digest: str | None
) -> PassIndex:
    key = (digest, metadata_digest)
    by_node = _NODES.get(key)
    if by_node is None:
        counts = llvm_node_counts(load())
        if metadata_digest is not None:
            table = _table(session, metadata_digest, load if metadata_digest == digest else None)
        else:
            table = _NO_TABLE  # no metadata anywhere: LLVM's location comments, if any
        by_node = _ByNode(files={})
        for (node, comment), count in counts.items():
            primary = table.primary(node, comment)
            if primary is None:
                continue
            by_node.files[primary.file] = by_node.files.get(primary.file, 0) + count
            by_node.nodes.setdefault((primary.file, primary.line), set()).add(node)
        by_node.files = dict(sorted(by_node.files.items(), key=lambda item: -item[1]))
        by_node.size = 64 * len(counts) + 64
        _NODES.put(key, by_node, by_node.size)

    def lines(file: str, line: int) -> list[int]:
        nodes = by_node.nodes.get((file, line))
        return llvm_node_lines(plain() or "", nodes) if nodes else []

    return PassIndex(by_node.files, lines, plain)


def clear() -> None:
    for cache in (_NODES, _TABLES, _FACTS):
        with cache.lock:
            cache.items.clear()
            cache.bytes = 0
