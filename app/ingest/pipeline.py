"""Ingest: inputs → parsers → one transaction of rows and blobs.

Every uploaded file is accounted for in `inputs`; every dump is kept (damaged ones apart, as
problems with their text); every non-IR log line is kept as the log's text. A failure rolls the
whole run back, so a killed or failed ingest leaves nothing half-written.

Its parts: this module walks the upload and sends each file to the reader of its kind (logs:
app/ingest/log_reader.py; cache files: app/ingest/cache_files.py; tritonparse traces: app/ingest/traces.py); a new input
kind gets its reader beside them and one branch in `Ingest._ingest_file`. What they gather is an
`IngestState` (app/ingest/state.py), which app/ingest/run_writer.py links and writes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.ingest.autotune_files import AutotuneFiles
from app.ingest.cache_files import CacheFiles
from app.ingest.cutile_files import CutileFiles
from app.ingest.disassembler import Disassembler
from app.ingest.file_streams import PrefixedStream, drain, read_small
from app.ingest.log_prescan import LogPrescan
from app.ingest.log_reader import LogReader
from app.ingest.pass_files import PassFiles
from app.ingest.profiles import ProfileCollector
from app.ingest.run_writer import RunWriter
from app.ingest.state import IngestError, IngestState
from app.ingest.traces import TraceCollector
from app.insight.op_index import OpIndex
from app.insight.op_term_scan import TermScanner
from app.store.blobs import BlobWriter
from app.store.labels import with_triton
from app.store.models import Compilation, Run
from parsers import registry
from parsers.helion.generated import helion_note
from parsers.inputs.sources import InputFile, InputLimitExceeded, Limits, SourceWalker
from parsers.tilelang.names import dump_file as tilelang_dump_file

__all__ = ["Ingest", "IngestError", "new_run_id"]

HEAD_BYTES = 8192
Progress = Callable[[str, int], None]
_KEPT_ROLES = {"log", "tritonparse", "source", "helion-code", "cache-group", "cache-stage", "cache-binary",
               "cache-metadata", "profile", "autotune", "pass-file", "cutile-log", "tileir-bytecode", "tilelang-pass"}
MAX_REASONS = 10  # files named in the error for an upload with nothing to ingest


def new_run_id() -> str:
    return secrets.token_hex(16)


class Ingest:
    def __init__(
        self,
        session: Session,
        *,
        title: str = "",
        owner: str | None = None,
        tags: Iterable[str] = (),
        labels: dict[str, str] | None = None,
        limits: Limits | None = None,
        progress: Progress | None = None,
        disassembler: Disassembler | None = None,
        prescan: LogPrescan | None = None,
        compact_level: int | None = None,
    ) -> None:
        # compact_level: new texts stored compacted at this level as they come (app/store/blobs.py)
        self.blobs = BlobWriter(session, quick_level=compact_level)
        self.run = Run(id=new_run_id(), title=title, owner=owner, tags=list(tags), labels=dict(labels or {}))
        # The op index's scan of each new text runs in a helper process, on the other core, unless
        # the log helper finds the terms as it scans.
        terms = None if prescan is not None and prescan.finds_terms else TermScanner()
        self.state = IngestState(session, self.blobs, self.run, op_index=OpIndex(terms))
        self.limits = limits or Limits()
        self.progress = progress or (lambda name, count: None)
        # This ingest's plain logs, already being scanned by a helper process: stopped when the ingest
        # ends (its starter closes it too, in case the ingest never ran).
        self.prescan = prescan
        self.logs = LogReader(self.state, lambda: self.state.bytes_read, prescan)
        self.cache_files = CacheFiles(self.state, disassembler)
        self.traces = TraceCollector(self.blobs, self.state.problem)
        self.profiles = ProfileCollector(self.state, self.limits.max_profile_bytes)
        self.autotune_files = AutotuneFiles(self.state)
        self.pass_files = PassFiles(self.state)
        self.cutile = CutileFiles(self.state, self.logs, self.pass_files)

    # -- entry point -----------------------------------------------------------
    def ingest(self, inputs: Iterable) -> Run:
        try:
            return self._ingest(inputs)
        finally:
            if self.prescan is not None:
                self.prescan.close()
            self.cache_files.close()
            self.blobs.close()
            self.state.op_index.close()

    def _ingest(self, inputs: Iterable) -> Run:
        self.state.session.add(self.run)
        self.state.session.flush()
        walker = SourceWalker(self.limits)
        try:
            for input_file in walker.walk(inputs):
                self._ingest_file(input_file)
        except InputLimitExceeded as error:
            raise IngestError(str(error), too_large=True) from error
        for skipped in walker.skipped:
            self.state.problem("skipped", f"skipped: {skipped.reason}", path=skipped.path)
            self.state.inputs.append({"path": skipped.path, "size": None, "role": "skipped", "note": skipped.reason})
        self._check_something_ingested()
        self.cache_files.collect_sass()
        self.cache_files.split_kept(frozenset(self.pass_files.groups))
        self.cache_files.check(frozenset(self.pass_files.groups))
        self.autotune_files.finish()
        self.pass_files.finish()
        RunWriter(self.state, self.cache_files.folders, self.traces).write()
        self.profiles.write()
        versions = self.state.session.scalars(select(Compilation.triton_version).where(Compilation.run_id == self.run.id))
        self.run.labels = with_triton(self.run.labels or {}, versions)
        return self.run

    def _check_something_ingested(self) -> None:
        """Refuse an upload that gives nothing to keep, saying why for each of its files."""
        inputs = self.state.inputs
        if not inputs:
            raise IngestError("the upload is empty: no files were found in it")
        if any(record["role"] in _KEPT_ROLES and record["size"] for record in inputs):
            return
        if all(record["role"] != "skipped" and record["size"] == 0 for record in inputs):
            raise IngestError("the upload is empty: every file in it has zero bytes")
        reasons = [f"{record['path']}: {record['note'] or record['role']}" for record in inputs]
        if len(reasons) > MAX_REASONS:
            reasons[MAX_REASONS:] = [f"and {len(reasons) - MAX_REASONS} more"]
        raise IngestError("nothing in the upload can be ingested: " + "; ".join(reasons))

    # -- per file ----------------------------------------------------------------
    def _ingest_file(self, input_file: InputFile) -> None:
        state = self.state
        with input_file.open() as raw:
            head = raw.read(HEAD_BYTES)
            stream = PrefixedStream(head, raw, self._count)
            input_format = registry.classify(input_file.path, head)
            role = input_format.role
            record = {"path": input_file.path, "size": input_file.size, "role": role, "note": None}
            state.inputs.append(record)
            if not head:
                record["size"] = 0
                record["note"] = "empty file"
                state.problem("warning", "empty file", path=input_file.path)
                return
            start = state.bytes_read
            if role == "log":
                record["log_blob"] = self.logs.read(input_file.path, stream, input_file.origin)
                record["size"] = state.bytes_read - start
                record["note"] = state.logs[-1].note
                if input_file.path.endswith(".json"):  # named JSON, but none of the JSON files irlens reads
                    state.problem("warning", "a .json file that is no kernel metadata, autotune file, profile or "
                                  "trace irlens reads: kept as a text log", path=input_file.path)
            elif role == "tritonparse":
                record["note"] = self.traces.read(input_file.path, stream)
                record["size"] = state.bytes_read - start
            elif role.startswith("cache-"):
                record["role"], record["size"] = self.cache_files.read(input_file.path, role, stream)
            elif role.startswith("profile"):
                record["size"], record["note"] = self.profiles.read(input_file.path, role, stream)
            elif role == "autotune":
                record["note"] = self.autotune_files.read(input_file.path, head, stream)
                record["size"] = state.bytes_read - start
            elif role == "cutile-log":
                record["log_blob"] = self.cutile.read_log(input_file.path, stream, input_file.origin)
                record["size"] = state.bytes_read - start
                record["note"] = state.logs[-1].note
            elif role == "tileir-bytecode":
                record["size"], record["note"] = self.cutile.read_bytecode(input_file.path, stream)
            elif role in ("pass-file", "tilelang-pass"):
                place = registry.ir_file_place if role == "pass-file" else tilelang_dump_file
                info = place(input_file.path, head)
                assert info is not None  # the registry matched it so
                record["size"], record["note"] = self.pass_files.read(input_file.path, info, stream)
            elif role in ("source", "helion-code"):
                data = read_small(stream, input_file.path)
                record["size"] = len(data)
                text = data.decode("utf-8", "replace")
                state.add_source(input_file.path, data, text)
                if role == "helion-code":
                    record["note"] = helion_note(text)
            elif role == "binary":
                size, digest = drain(stream)
                record.update(size=size, note=f"binary data, not a log or a Triton file (sha256 {digest[:12]})")
                state.problem("skipped", "not a text log or a Triton file: binary data", path=input_file.path)
            else:
                record["size"], _ = drain(stream)
                record["note"] = input_format.description

    def _count(self, count: int) -> None:
        self.state.bytes_read += count
        self.progress("", self.state.bytes_read)
