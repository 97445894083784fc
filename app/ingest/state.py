"""What one ingest has gathered so far, shared by its parts: the file readers (app/ingest/pipeline.py,
app/ingest/log_reader.py, app/ingest/cache_files.py), the linking of the pieces (app/ingest/linking.py) and the writer
(app/ingest/run_writer.py). It holds no logic beyond recording: each part owns its own steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from app.insight.op_index import OpIndex
from app.store.blobs import BlobWriter
from app.store.models import Run
from parsers.logs.compilations import CompilationGrouper, CompilationRecord
from parsers.logs.diagnostics import Diagnostic as ParsedDiagnostic
from parsers.logs.pm_trace import Trace
from parsers.logs.reproducer import Reproducer
from parsers.logs.timing import TimingReport


class IngestError(Exception):
    """Bad input as a whole (empty upload, limits exceeded): shown to the user as is. `too_large` for
    a limit (size, files, bomb ratio, time): HTTP 413."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


@dataclass
class LogResult:
    """What one log file produced."""

    name: str
    grouper: CompilationGrouper = field(default_factory=CompilationGrouper)
    diagnostics: list[tuple[ParsedDiagnostic, int]] = field(default_factory=list)  # (diag, compilations before it)
    timings: list[tuple[TimingReport, CompilationRecord | None]] = field(default_factory=list)
    reproducer: Reproducer | None = None  # MLIR's reproducer in the gap text since the last dump
    trace: Trace = field(default_factory=Trace)  # LLVM pass-manager lines since the last dump
    note: str | None = None  # what the upload's file list says of it (plain text: no IR in it)


@dataclass
class IngestState:
    session: Session
    blobs: BlobWriter
    run: Run
    logs: list[LogResult] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for loc matching and diagnostics
    source_rows: list[dict] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)  # InputRecord fields, one per file of the upload
    problems: list[dict] = field(default_factory=list)  # Problem fields
    bytes_read: int = 0
    op_index: OpIndex = field(default_factory=OpIndex)  # ops of each stored dump, written with the snapshots

    def problem(self, kind: str, message: str, **fields) -> None:
        self.problems.append({"kind": kind, "message": message, **fields})

    def add_source(self, path: str, data: bytes, text: str, digest: str | None = None) -> None:
        blob = self.blobs.put(data, digest)
        self.sources[path] = text
        self.source_rows.append({"run_id": self.run.id, "path": path, "blob": blob})
