"""Per-pass files (parsers/perpass/): each file one snapshot, each folder (or file-name prefix) one
compilation, its snapshots in the order the numbering gives, whatever order the upload holds them in.

A file's text is stored as it is read; only its banner, place and facts are kept until the upload
is read (memory does not grow with the files' size). The compilations join the logs' ones
(`state.logs`), so pages, diffs, op search and the Python map treat them alike. A snapshot of a
file without locations takes its Python lines from the compilation's first snapshot where that one
has them (app/render/loc_transfer.py).
"""

from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass
from typing import BinaryIO

from app.ingest.file_streams import read_small
from app.ingest.state import IngestState, LogResult
from parsers.logs import scopes
from parsers.logs.compilations import GENERIC_MLIR_STAGE, CompilationRecord, SnapshotList, SnapshotRecord
from parsers.perpass import files
from parsers.perpass.names import NUMBERED, PassFile
from parsers.records import DumpHeader
from parsers.tilelang import names as tilelang

_STYLE_NAMES = {
    "numbered": "per-pass file (<prefix>_NNN_<Pass>.mlir)",
    "tree": "MLIR tree-printing file",
    "llvm-dir": "LLVM -ir-dump-directory file",
    "cute-keep": "CuTe DSL CUTE_DSL_KEEP IR",  # parsers/cute/keep.py
    "module": "IR file holding one module: one snapshot",
    "tilelang": "TileLang tl.dump_ir_path file (TVMScript after one pass)",
}


_STAGES = {"llvm": "llvm-ir", tilelang.KIND: "tir"}  # else the generic "mlir"
MAX_NAME = 500  # compilations.kernel and banners.pass_name are String(500)


@dataclass
class IrFile:
    path: str
    info: PassFile
    header: DumpHeader | None  # its own banner, if it has one (or the one made for it)
    kind: str  # "mlir" | "llvm"
    blob: str
    size: int
    line_count: int
    level: str
    unit: str | None
    kernel: str | None
    line: int = 1  # where its text starts in its file (a log's block)


class PassFiles:
    def __init__(self, state: IngestState) -> None:
        self.state = state
        self.groups: dict[str, list[IrFile]] = {}

    def read(self, path: str, info: PassFile, stream: BinaryIO) -> tuple[int, str]:
        """Keep one file's text; returns its size and the note the upload's file list shows."""
        data = read_small(stream, path)
        header, body = files.split_banner(data)
        self.groups.setdefault(info.group, []).append(self.store(path, info, body, header))
        return len(data), _STYLE_NAMES[info.style]

    def store(self, path: str, info: PassFile, body: bytes, header: DumpHeader | None = None,
              line: int = 1) -> IrFile:
        """One snapshot's text stored (and sent to the op index); what its compilation needs of it."""
        body = body.rstrip(b"\r\n\t ")
        kind = tilelang.KIND if info.style == tilelang.TILELANG else files.ir_kind(body, path)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            self.state.problem("warning", "bytes that are not UTF-8 in this IR file (shown as \ufffd)", path=path)
        blob = self.state.blobs.put(body)
        self.state.op_index.add_blob(blob, body)
        if kind == tilelang.KIND:
            level, unit = scopes.MODULE, None  # TVMScript: the IRModule, whole, after each pass
        else:
            level, unit = scopes.level_and_name(header or files.header_for(info, path, kind, None), body)
        kernel = tilelang.kernel_of(body) if kind == tilelang.KIND else files.kernel_of(body)
        return IrFile(path, info, header, kind, blob, len(body), body.count(b"\n") + 1 if body else 0, level,
                      unit, kernel, line)

    def finish(self) -> None:
        """One compilation per group, appended to the logs' (a log result of its own each)."""
        for group, members in self.groups.items():
            members.sort(key=lambda member: (member.info.order, member.path))
            self._check_numbering(members)
            record = compilation_of(group, members)
            result = LogResult(group or "/")
            result.grouper.compilations.append(record)
            self.state.logs.append(result)
        self.groups = {}

    def _check_numbering(self, members: list[IrFile]) -> None:
        """Two files of one number: two runs' files mixed in one folder, most likely."""
        seen: dict[tuple[int, ...], str] = {}
        for member in members:
            if member.info.style != NUMBERED:
                continue
            other = seen.setdefault(member.info.order, member.path)
            if other != member.path:
                self.state.problem("warning", f"two per-pass files share a number with {posixpath.basename(other)}: "
                                   "both kept, in name order (files of two runs in one folder?)", path=member.path)


def compilation_of(group: str, members: list[IrFile]) -> CompilationRecord:
    """One compilation of `members`' snapshots, in their order (`group`: their folder and prefix)."""
    first = members[0]
    named = next((member.info.pass_name for member in members if member.info.pass_name), None)
    kernel = first.info.prefix or next((member.kernel for member in members if member.kernel), None)
    # names come from file names, symbols and log lines: as long as they like, the column holds 500
    record = CompilationRecord(kernel[:MAX_NAME] if kernel else None, 1, SnapshotList(), stage=GENERIC_MLIR_STAGE)
    record.generic = True
    record.named_by_module = True
    record.files = group
    last: dict[str, tuple[int, str]] = {}
    for index, member in enumerate(members):
        header = member.header or files.header_for(member.info, member.path, member.kind, named)
        if len(header.pass_name) > MAX_NAME:
            header = dataclasses.replace(header, pass_name=header.pass_name[:MAX_NAME])
        key = scopes.scope_key(member.level, member.unit)
        previous = last.get(key)
        last[key] = (index, member.blob)
        record.snapshots.append(SnapshotRecord(
            index=index, header=header, line=member.line, blob=member.blob, size=member.size,
            line_count=member.line_count, stage=_STAGES.get(member.kind, GENERIC_MLIR_STAGE),
            changed=previous is None or previous[1] != member.blob, level=member.level,
            base=previous[0] if previous else None, unit=member.unit,
        ))
    return record
