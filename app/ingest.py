"""Ingest: inputs → parsers → one transaction of rows and blobs.

Every uploaded file is accounted for in `inputs`; every dump is kept (damaged ones apart, as
problems with their text); every non-IR log line is kept as the log's text. A failure rolls the
whole run back, so a killed or failed ingest leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

import zstandard
from sqlalchemy import insert
from sqlalchemy.orm import Session

from app import line_index
from app.blobs import BlobWriter, insert_rows, sha256
from app.linking import CacheFolder, attach_timings, link_caches, resolve_diagnostics
from app.models import (
    Artifact,
    Compilation,
    Diagnostic,
    InputRecord,
    Launch,
    Problem,
    Run,
    Snapshot,
    Source,
    Timing,
)
from app.op_index import OpIndex
from app.traces import TraceCollector
from parsers import cache, registry
from parsers.compilations import CompilationGrouper, CompilationRecord
from parsers.diagnostics import Diagnostic as ParsedDiagnostic
from parsers.diagnostics import LogLines, parse_gap
from parsers.log import NO_MODULE, body_damage, scan_log
from parsers.pm_trace import Trace
from parsers.records import CutLine, Dump, GapBlock, UnknownBanner
from parsers.reproducer import Reproducer, find_reproducer
from parsers.sources import InputFile, InputLimitExceeded, Limits, SourceWalker
from parsers.timing import TimingReport

HEAD_BYTES = 8192
MAX_SMALL_FILE = 512 << 20  # a single stage file or source larger than this is not read whole
SNAPSHOT_BATCH = 5000  # snapshot rows per INSERT (executemany)
_SNAPSHOT_COLUMNS = (
    "compilation_pk", "index", "kind", "when", "pass_name", "pass_arg", "pass_options", "scope", "failed",
    "stage", "changed", "line", "size", "line_count", "blob", "header", "scope_kind", "base_index", "trace",
)
Progress = Callable[[str, int], None]
_KEPT_ROLES = {"log", "tritonparse", "source", "cache-group", "cache-stage", "cache-binary", "cache-metadata"}
LONG_LINE = 1 << 20  # a gap line longer than this is reported: binary junk or a runaway print
MAX_REASONS = 10  # files named in the error for an upload with nothing to ingest


class IngestError(Exception):
    """Bad input as a whole (empty upload, limits exceeded): shown to the user as is. `too_large` for
    a limit (size, files, bomb ratio, time): HTTP 413."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


def new_run_id() -> str:
    return secrets.token_hex(16)


class _PrefixedStream(io.RawIOBase):
    """A stream whose first bytes were already read for sniffing; reads them again first."""

    def __init__(self, head: bytes, rest: BinaryIO, on_read: Callable[[int], None]) -> None:
        self.head, self.rest, self.on_read = head, rest, on_read

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.head:
            if size < 0 or size >= len(self.head):
                data, self.head = self.head, b""
                if size < 0:
                    data += self.rest.read()
                else:
                    data += self.rest.read(size - len(data)) if size > len(data) else b""
            else:
                data, self.head = self.head[:size], self.head[size:]
        else:
            data = self.rest.read(size)
        self.on_read(len(data))
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


@dataclass
class LogResult:
    """What one log file produced."""

    name: str
    grouper: CompilationGrouper = field(default_factory=CompilationGrouper)
    diagnostics: list[tuple[ParsedDiagnostic, int]] = field(default_factory=list)  # (diag, compilations before it)
    timings: list[tuple[TimingReport, CompilationRecord | None]] = field(default_factory=list)
    reproducer: Reproducer | None = None  # MLIR's reproducer in the gap text since the last dump
    trace: Trace = field(default_factory=Trace)  # LLVM pass-manager lines since the last dump


class _LogText:
    """A log's non-IR lines, hashed and compressed as they stream by (in blocks: most adds are the
    single blank line between two dumps)."""

    BLOCK = 1 << 20

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.compressor = zstandard.ZstdCompressor(level=3).compressobj()
        self.parts: list[bytes] = []
        self.buffer: list[str] = []
        self.buffered = 0
        self.size = 0

    def add(self, text: str) -> None:
        self.buffer.append(text)
        self.buffered += len(text)
        if self.buffered >= self.BLOCK:
            self._compress()

    def _compress(self) -> None:
        data = "".join(self.buffer).encode("utf-8")
        self.buffer, self.buffered = [], 0
        self.digest.update(data)
        self.size += len(data)
        self.parts.append(self.compressor.compress(data))

    def finish(self) -> tuple[str, int, bytes]:
        self._compress()
        self.parts.append(self.compressor.flush())
        return self.digest.hexdigest(), self.size, b"".join(self.parts)


class Ingest:
    def __init__(
        self,
        session: Session,
        *,
        title: str = "",
        owner: str | None = None,
        tags: Iterable[str] = (),
        limits: Limits | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.session = session
        self.blobs = BlobWriter(session)
        self.run = Run(id=new_run_id(), title=title, owner=owner, tags=list(tags))
        self.limits = limits or Limits()
        self.progress = progress or (lambda name, count: None)
        self.logs: list[LogResult] = []
        self.folders: dict[str, CacheFolder] = {}
        self.sources: dict[str, str] = {}  # path -> text, for loc matching and diagnostics
        self.inputs: list[dict] = []
        self.source_rows: list[dict] = []
        self.problems: list[dict] = []
        self.bytes_read = 0
        self.traces = TraceCollector(self.blobs, self._problem)
        self.op_index = OpIndex()

    # -- entry point -----------------------------------------------------------
    def ingest(self, inputs: Iterable) -> Run:
        try:
            return self._ingest(inputs)
        finally:
            self.blobs.close()

    def _ingest(self, inputs: Iterable) -> Run:
        self.session.add(self.run)
        self.session.flush()
        walker = SourceWalker(self.limits)
        try:
            for input_file in walker.walk(inputs):
                self._ingest_file(input_file)
        except InputLimitExceeded as error:
            raise IngestError(str(error), too_large=True) from error
        for skipped in walker.skipped:
            self._problem("skipped", f"skipped: {skipped.reason}", path=skipped.path)
            self.inputs.append({"path": skipped.path, "size": None, "role": "skipped", "note": skipped.reason})
        self._check_something_ingested()
        self._write()
        line_index.index_run(self.session, self.run.id)  # the map page's indexes, before its first visit
        return self.run

    def _check_something_ingested(self) -> None:
        """Refuse an upload that gives nothing to keep, saying why for each of its files."""
        if not self.inputs:
            raise IngestError("the upload is empty: no files were found in it")
        if any(record["role"] in _KEPT_ROLES and record["size"] for record in self.inputs):
            return
        if all(record["role"] != "skipped" and record["size"] == 0 for record in self.inputs):
            raise IngestError("the upload is empty: every file in it has zero bytes")
        reasons = [f"{record['path']}: {record['note'] or record['role']}" for record in self.inputs]
        if len(reasons) > MAX_REASONS:
            reasons[MAX_REASONS:] = [f"and {len(reasons) - MAX_REASONS} more"]
        raise IngestError("nothing in the upload can be ingested: " + "; ".join(reasons))

    # -- per file ----------------------------------------------------------------
    def _ingest_file(self, input_file: InputFile) -> None:
        with input_file.open() as raw:
            head = raw.read(HEAD_BYTES)
            stream = _PrefixedStream(head, raw, self._count)
            input_format = registry.classify(input_file.path, head)
            role = input_format.role
            record = {"path": input_file.path, "size": input_file.size, "role": role, "note": None}
            self.inputs.append(record)
            if not head:
                record["size"] = 0
                record["note"] = "empty file"
                self._problem("warning", "empty file", path=input_file.path)
                return
            if role == "log":
                record["log_blob"], record["size"] = self._ingest_log(input_file.path, stream)
            elif role == "tritonparse":
                start = self.bytes_read
                record["note"] = self.traces.read(input_file.path, stream)
                record["size"] = self.bytes_read - start
            elif role.startswith("cache-"):
                record["role"], record["size"] = self._ingest_cache_file(input_file.path, role, stream)
            elif role == "source":
                data = self._read_small(stream, input_file.path)
                record["size"] = len(data)
                digest = self.blobs.put(data)
                self.sources[input_file.path] = data.decode("utf-8", "replace")
                self.source_rows.append({"run_id": self.run.id, "path": input_file.path, "blob": digest})
            elif role == "binary":
                size, digest = self._drain(stream)
                record.update(size=size, note=f"binary data, not a log or a Triton file (sha256 {digest[:12]})")
                self._problem("skipped", "not a text log or a Triton file: binary data", path=input_file.path)
            else:
                record["size"], _ = self._drain(stream)
                record["note"] = input_format.description

    def _add_trace_sources(self, sources: dict[str, str]) -> None:
        """Python sources a trace holds (the kernels' own lines; the rest blank), for paths the upload
        did not bring as files."""
        for path, text in sources.items():
            if path in self.sources:
                continue
            data = text.encode("utf-8", "surrogatepass")
            self.sources[path] = text
            self.source_rows.append({"run_id": self.run.id, "path": path, "blob": self.blobs.put(data)})

    def _count(self, count: int) -> None:
        self.bytes_read += count
        self.progress("", self.bytes_read)

    def _read_small(self, stream: BinaryIO, path: str) -> bytes:
        data = stream.read(MAX_SMALL_FILE + 1)
        if len(data) > MAX_SMALL_FILE:
            raise IngestError(f"{path} is larger than {MAX_SMALL_FILE >> 20} MB")
        return data

    @staticmethod
    def _drain(stream: BinaryIO) -> tuple[int, str]:
        digest, size = hashlib.sha256(), 0
        while block := stream.read(1 << 20):
            digest.update(block)
            size += len(block)
        return size, digest.hexdigest()

    def _ingest_cache_file(self, path: str, role: str, stream: BinaryIO) -> tuple[str, int]:
        folder = self.folders.setdefault(cache.folder_of(path), CacheFolder(cache.folder_of(path)))
        if path in folder.paths:
            size, _ = self._drain(stream)
            self._problem("warning", "the same file is in the upload twice: the second copy is not kept", path=path)
            return "duplicate", size
        if role == "cache-binary":
            size, digest = self._drain(stream)
            folder.add(path.rsplit(".", 1)[-1], path, size, digest, None, None)
            return role, size
        data = self._read_small(stream, path)
        digest = sha256(data)
        if role == "cache-metadata":
            metadata, problems = cache.read_metadata(data)
            for problem in problems:
                self._problem("warning", problem, path=path)
            folder.metadata = metadata or folder.metadata
            kind = "json"
        elif role == "cache-group":
            kind = "grp"
        else:
            kind = cache.stage_of(path) or "text"
        blob = self.blobs.put(data, digest)
        match = sha256(data.rstrip(b"\r\n")) if kind in ("ttir", "ttgir", "glir", "source") else None
        folder.add(kind, path, len(data), digest, blob, match)
        return role, len(data)

    def _ingest_log(self, path: str, stream: BinaryIO) -> tuple[str | None, int]:
        result = LogResult(path)
        text = _LogText()
        start = self.bytes_read
        replaced = 0
        dumps = 0  # dumps and dump banners, parsed or not

        def process(record, digest: str | None) -> None:
            nonlocal replaced, dumps
            kind = type(record)
            if kind is Dump:
                dumps += 1
                self._add_dump(result, record, path, digest)
            elif kind is GapBlock:
                if len(record.lines) == 1 and not record.lines[0][1]:
                    text.add("\n")  # the blank line between two dumps: nothing to parse
                    return
                text.add("".join(line + "\n" for _, line in record.lines))
                result.reproducer = find_reproducer(record.lines) or result.reproducer
                result.trace.add_lines(record.lines)
                for parsed in parse_gap(record.lines):
                    self._add_gap_record(result, parsed)
                replaced += sum(1 for _, line in record.lines if "\ufffd" in line)
                for number, line in record.lines:
                    if len(line) > LONG_LINE:
                        self._problem("warning", f"a log line of {len(line) / 1e6:.1f} million characters, "
                                      "not IR: kept as log text", path=path, line=number)
            elif kind is CutLine:
                self._problem("warning", f"a line of {(record.kept + record.dropped) / 1e6:.1f} MB: only its "
                              f"first {record.kept / 1e6:.1f} MB kept", path=path, line=record.line)
            elif isinstance(record, UnknownBanner):
                dumps += 1
                self._problem("warning", "a dump banner irlens cannot parse; kept as log text",
                              path=path, line=record.line, header=record.text)

        for record in scan_log(stream):
            process(record, None)
        if replaced:
            self._problem("warning", f"{replaced} log lines hold bytes that are not UTF-8 (shown as \ufffd)", path=path)
        for kernel, orphan in result.grouper.orphans:
            self._problem(
                "orphan-dump",
                f"{orphan.header.kind} dump of {kernel or 'an unknown kernel'} before any compilation in this log; "
                "kept, but not part of a compilation",
                path=path, line=orphan.line, header=orphan.header.raw, blob=orphan.blob,
            )
        if not dumps and not result.diagnostics and not result.timings and self.bytes_read > start:
            self._problem(
                "warning", f"no Triton IR, diagnostics or timing report found in {posixpath.basename(path)}; "
                "kept as log lines", path=path,
            )
        self.logs.append(result)
        digest, size, compressed = text.finish()
        blob = self.blobs.put_compressed(digest, size, compressed) if size else None
        return blob, self.bytes_read - start

    def _add_dump(self, result: LogResult, dump: Dump, path: str, digest: str | None = None) -> None:
        reproducer, result.reproducer = result.reproducer, None  # it belongs to the next dump only
        if dump.header.failed and dump.damage == NO_MODULE and reproducer is not None:
            dump = self._reproducer_dump(dump, reproducer, path)
            digest = None
        digest = self.blobs.put(dump.body, digest)
        if dump.damage:
            self.run.damaged += 1
            self._problem("damaged-dump", dump.damage, path=path, line=dump.line, header=dump.header.raw, blob=digest)
            if dump.truncated:
                result.grouper.mark_truncated("the log ends inside its last dump")
            if dump.header.failed:
                result.grouper.mark_current_failed(dump.header)
            return
        self.op_index.add_blob(digest, dump.body)
        result.grouper.add(dump, digest, result.trace.take(dump.header))

    def _reproducer_dump(self, dump: Dump, reproducer: Reproducer, path: str) -> Dump:
        """The failed pass's dump printed no module (only aliases and #loc lines): the module MLIR's
        reproducer printed just before it is the IR at the failure. It stands in for the dump's
        body under the dump's banner; the dump's own text is kept with a note."""
        self._problem(
            "warning",
            f"the dump after the failed pass {dump.header.pass_name} holds no module: its snapshot is the "
            f"module of MLIR's reproducer printed before it (log lines {reproducer.first_line}-{reproducer.last_line})",
            path=path, line=dump.line, header=dump.header.raw, blob=self.blobs.put(dump.body),
        )
        body = reproducer.text.encode("utf-8")
        return Dump(dump.header, body, dump.line, body_damage(body, "mlir"), dump.truncated)

    def _add_gap_record(self, result: LogResult, parsed) -> None:
        if isinstance(parsed, LogLines):
            return
        if isinstance(parsed, TimingReport):
            current = result.grouper.compilations[-1] if result.grouper.compilations else None
            result.timings.append((parsed, current))
            return
        result.diagnostics.append((parsed, len(result.grouper.compilations)))

    def _problem(self, kind: str, message: str, **fields) -> None:
        self.problems.append({"kind": kind, "message": message, **fields})

    # -- writing ------------------------------------------------------------------
    def _check_folders(self) -> None:
        """Tell the user about cache folders that are suspect as a whole: a copy of another one, or
        a kernel binary alone (a .cubin shows nothing but its size and hash)."""
        seen: dict[frozenset, str] = {}
        for folder in self.folders.values():
            if folder.origin == "trace":
                continue  # a traced compilation holds texts only, never a binary
            files = frozenset((artifact["kind"], artifact["sha256"]) for artifact in folder.files)
            if files and files in seen:
                self._problem("warning", f"the same kernel files as {seen[files] or 'the top folder'}: "
                              "a copy of the same cache entry", path=folder.path or None)
            seen.setdefault(files, folder.path)
            kinds = {artifact["kind"] for artifact in folder.files}
            if kinds and kinds <= {"cubin", "hsaco"}:
                for artifact in folder.files:
                    self._problem("warning", "a kernel binary without the IR or metadata of its cache folder: "
                                  "kept by size and hash only", path=artifact["path"])
            elif "json" in kinds:
                # Every complete cache entry holds its TTGIR, LLVM IR and binary beside the metadata.
                missing = [name for name, found in (
                    (".ttgir", "ttgir" in kinds), (".llir", "llir" in kinds), ("binary", kinds & {"cubin", "hsaco"}),
                ) if not found]
                if missing:
                    self._problem("warning", f"an incomplete cache entry: no {', '.join(missing)} (the compile "
                                  "failed, or files were left out of the upload); the rest is kept",
                                  path=folder.path or None)
            elif kinds and not kinds & {"ttir", "ttgir", "glir", "source", "grp"}:
                self._problem("warning", "stage files without the IR or metadata of their cache folder: kept, "
                              "but nothing ties them to a log's compilation", path=folder.path or None)

    def _write(self) -> None:
        run = self.run
        self._check_folders()
        ordered: list[tuple[CompilationRecord, str]] = []
        diagnostics: list[tuple[ParsedDiagnostic, CompilationRecord | None, str]] = []
        for log in self.logs:
            log_compilations, log_diagnostics = resolve_diagnostics(log, self.sources)
            ordered.extend((compilation, log.name) for compilation in log_compilations)
            diagnostics.extend((diag, owner, log.name) for diag, owner in log_diagnostics)
        traced_only, trace_sources = self.traces.finish(self.folders)
        self._add_trace_sources(trace_sources)
        links, cache_only = link_caches([c for c, _ in ordered], self.folders)
        for compilation, folder in traced_only:
            links.add(compilation, folder)
            cache_only.append(compilation)
        ordered.extend((compilation, None) for compilation in cache_only)
        timings = attach_timings(self.logs, [c for c, _ in ordered], cache_only, self._problem)

        rows: dict[int, Compilation] = {}
        for ordinal, (record, log_name) in enumerate(ordered, start=1):
            folder = links.get(id(record))
            metadata = folder.metadata if folder else None
            reports = timings.get(id(record), [])
            row = Compilation(
                run_id=run.id,
                ordinal=ordinal,
                kernel=record.kernel or (metadata.name if metadata else None),
                origin="log" if record.snapshots else (folder.origin if folder else "diagnostic"),
                log_name=log_name,
                first_line=record.first_line or None,
                target=record.target or (metadata.target if metadata else None),
                triton_version=metadata.triton_version if metadata else None,
                status=record.status,
                status_reason=record.status_reason,
                failed_pass=record.failed_pass,
                num_warps=metadata.num_warps if metadata else None,
                num_stages=metadata.num_stages if metadata else None,
                num_ctas=metadata.num_ctas if metadata else None,
                shared=metadata.shared if metadata else None,
                cache_key=folder.path if folder else None,
                cache_match=folder.matched_by if folder else None,
                compile_seconds=round(sum(report.total for report in reports), 6) if reports else None,
                counts={kind: record.count(kind) for kind in ("mlir", "internal", "llvm")},
                changed=record.changed_count,
                metadata_json=metadata.raw if metadata else None,
            )
            self.session.add(row)
            rows[id(record)] = row
        _inherit_target(list(rows.values()))
        self.blobs.flush()
        self.session.flush()

        snapshot_rows: list[tuple] = []
        artifact_rows, timing_rows = [], []
        for record, _ in ordered:
            row = rows[id(record)]
            pk = row.pk
            for snapshot in record.snapshots:
                header = snapshot.header
                snapshot_rows.append((
                    pk, snapshot.index, header.kind, header.when, header.pass_name, header.pass_arg,
                    header.pass_options, snapshot.scope, header.failed, snapshot.stage, snapshot.changed,
                    snapshot.line, snapshot.size, snapshot.line_count, snapshot.blob, header.raw,
                    snapshot.level, snapshot.base, json.dumps(snapshot.trace) if snapshot.trace else None,
                ))
                if len(snapshot_rows) >= SNAPSHOT_BATCH:
                    insert_rows(self.session, Snapshot.__table__, _SNAPSHOT_COLUMNS, snapshot_rows)
                    snapshot_rows = []
            for folder in links.get_all(id(record)):
                for artifact in folder.files:
                    artifact_rows.append(dict(compilation_pk=row.pk, **artifact))
            for report_index, report in enumerate(timings.get(id(record), [])):
                for entry in report.entries:
                    timing_rows.append({
                        "compilation_pk": row.pk, "report": report_index, "name": entry.name,
                        "depth": entry.depth, "wall": entry.wall, "percent": entry.percent,
                        "analysis": entry.analysis,
                    })
        insert_rows(self.session, Snapshot.__table__, _SNAPSHOT_COLUMNS, snapshot_rows)
        batches = ((Artifact, artifact_rows), (Timing, timing_rows), (Source, self.source_rows))
        for model, batch in batches:
            if batch:
                self.session.execute(insert(model.__table__), batch)
        for batch in self.traces.launch_rows([(record, rows[id(record)].pk) for record, _ in ordered], links):
            self.session.execute(insert(Launch.__table__), batch)

        for diag, owner, log_name in diagnostics:
            self.session.add(
                Diagnostic(
                    run_id=run.id, compilation_pk=rows[id(owner)].pk if owner is not None else None,
                    kind=diag.kind, severity=diag.severity, message=diag.message, file=diag.file,
                    line=diag.line, col=diag.col, text=diag.text, log_name=log_name, log_line=diag.first_line,
                )
            )
        for problem in self.problems:
            self.session.add(Problem(run_id=run.id, **problem))
        for record in self.inputs:
            self.session.add(InputRecord(run_id=run.id, **record))
        run.input_bytes = self.bytes_read
        self.blobs.flush()
        run.stats = {
            "new_blobs": self.blobs.new_blobs,
            "stored_bytes": self.blobs.stored_bytes,
            "packs": {"strong": self.blobs.packs_strong, "fast": self.blobs.packs_fast},
            "files": len(self.inputs),
        }
        self.op_index.write(self.session, run, ((rows[id(record)].pk, record.snapshots) for record, _ in ordered))
        self.session.flush()


def _inherit_target(rows: list[Compilation]) -> None:
    """A failed compilation made from a diagnostic has no IR to read its target from. When every
    other compilation of the run comes from the diagnostic's own log and they all agree on the
    target (or the Triton version), it was compiled by that process for it too; otherwise the
    field stays unknown."""
    made = [row for row in rows if row.origin == "diagnostic"]
    others = [row for row in rows if row.origin != "diagnostic"]
    if not made or not others:
        return
    logs = {row.log_name for row in others}
    if len(logs) != 1 or None in logs:
        return
    (log_name,) = logs
    for field_name in ("target", "triton_version"):
        values = {getattr(row, field_name) for row in others}
        if len(values) != 1 or None in values:
            continue
        (value,) = values
        for row in made:
            if row.log_name == log_name and getattr(row, field_name) is None:
                setattr(row, field_name, value)
