"""Writing one ingest's rows once every file was read: compilations (their pieces linked first),
snapshots in batches, artifacts, timings, launches, diagnostics, problems and the inputs' records."""

from __future__ import annotations

import json

from sqlalchemy import insert

from app.ingest.banners import banner_ids, banner_key
from app.ingest.binary_resources import stored_resources
from app.ingest.linking import CacheFolder, attach_timings, link_caches, resolve_diagnostics
from app.ingest.state import IngestState
from app.ingest.traces import TraceCollector
from app.store.blobs import insert_rows
from app.store.models import (
    Artifact,
    Compilation,
    Diagnostic,
    InputRecord,
    Launch,
    Problem,
    Snapshot,
    Source,
    Timing,
    stored_artifact,
)
from parsers.logs.compilations import CompilationRecord
from parsers.logs.diagnostics import Diagnostic as ParsedDiagnostic

SNAPSHOT_BATCH = 5000  # snapshot rows per INSERT (executemany)
_SNAPSHOT_COLUMNS = (
    "compilation_pk", "index", "unit", "stage", "changed", "line", "size", "line_count", "blob_id", "banner_pk",
    "scope_kind", "base_index", "trace",
)


class RunWriter:
    def __init__(self, state: IngestState, folders: dict[str, CacheFolder], traces: TraceCollector) -> None:
        self.state = state
        self.folders = folders
        self.traces = traces

    def write(self) -> None:
        state = self.state
        run = state.run
        ordered: list[tuple[CompilationRecord, str]] = []
        diagnostics: list[tuple[ParsedDiagnostic, CompilationRecord | None, str]] = []
        for log in state.logs:
            log_compilations, log_diagnostics = resolve_diagnostics(log, state.sources)
            ordered.extend((compilation, log.name) for compilation in log_compilations)
            diagnostics.extend((diag, owner, log.name) for diag, owner in log_diagnostics)
        traced_only, trace_sources = self.traces.finish(self.folders)
        self._add_trace_sources(trace_sources)
        links, cache_only = link_caches([c for c, _ in ordered], self.folders)
        for compilation, folder in traced_only:
            links.add(compilation, folder)
            cache_only.append(compilation)
        ordered.extend((compilation, None) for compilation in cache_only)
        timings = attach_timings(state.logs, [c for c, _ in ordered], cache_only, state.problem)

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
                counts=_counts(record),
                changed=record.changed_count,
                metadata_json=metadata.raw if metadata else None,
                resources=stored_resources(folder.resources, record.kernel or (metadata.name if metadata else None))
                if folder else None,
            )
            state.session.add(row)
            rows[id(record)] = row
        _inherit_target(list(rows.values()))
        state.blobs.flush()
        state.session.flush()

        snapshot_rows: list[tuple] = []
        artifact_rows, timing_rows = [], []
        # One key per distinct header object (the parser interns them), not one per snapshot.
        keys = {id(h): banner_key(h) for record, _ in ordered for h in record.snapshots.headers()}
        pks = banner_ids(state.session, set(keys.values()))
        banners = {header: pks[key] for header, key in keys.items()}
        for record, _ in ordered:
            row = rows[id(record)]
            pk = row.pk
            for snapshot in record.snapshots:
                header = snapshot.header
                scope = snapshot.scope
                snapshot_rows.append((
                    pk, snapshot.index, scope if scope != header.scope else None, snapshot.stage, snapshot.changed,
                    snapshot.line, snapshot.size, snapshot.line_count, snapshot.blob, banners[id(header)],
                    snapshot.level, snapshot.base, json.dumps(snapshot.trace) if snapshot.trace else None,
                ))
                if len(snapshot_rows) >= SNAPSHOT_BATCH:
                    insert_rows(state.session, Snapshot.__table__, _SNAPSHOT_COLUMNS, snapshot_rows, blob_ids=("blob_id",))
                    snapshot_rows = []
            for folder in links.get_all(id(record)):
                for artifact in folder.files:
                    artifact_rows.append(stored_artifact(dict(compilation_pk=row.pk, **artifact), row.cache_key))
            for report_index, report in enumerate(timings.get(id(record), [])):
                for entry in report.entries:
                    timing_rows.append({
                        "compilation_pk": row.pk, "report": report_index, "name": entry.name,
                        "depth": entry.depth, "wall": entry.wall, "percent": entry.percent,
                        "analysis": entry.analysis,
                    })
        insert_rows(state.session, Snapshot.__table__, _SNAPSHOT_COLUMNS, snapshot_rows, blob_ids=("blob_id",))
        batches = ((Artifact, artifact_rows), (Timing, timing_rows), (Source, state.source_rows))
        for model, batch in batches:
            if batch:
                state.session.execute(insert(model.__table__), batch)
        for batch in self.traces.launch_rows([(record, rows[id(record)].pk) for record, _ in ordered], links):
            state.session.execute(insert(Launch.__table__), batch)

        for diag, owner, log_name in diagnostics:
            state.session.add(
                Diagnostic(
                    run_id=run.id, compilation_pk=rows[id(owner)].pk if owner is not None else None,
                    kind=diag.kind, severity=diag.severity, message=diag.message, file=diag.file,
                    line=diag.line, col=diag.col, text=diag.text, log_name=log_name, log_line=diag.first_line,
                )
            )
        for problem in state.problems:
            state.session.add(Problem(run_id=run.id, **problem))
        for record in state.inputs:
            state.session.add(InputRecord(run_id=run.id, **record))
        run.input_bytes = state.bytes_read
        state.blobs.flush()
        run.stats = {
            "new_blobs": state.blobs.new_blobs,
            "stored_bytes": state.blobs.stored_bytes,
            "packs": state.blobs.packs,
            "files": len(state.inputs),
        }
        state.op_index.write(
            state.session, run,
            ((rows[id(record)].pk, enumerate(record.snapshots.blobs()), rows[id(record)].target) for record, _ in ordered),
        )
        state.session.flush()


    def _add_trace_sources(self, sources: dict[str, str]) -> None:
        """Python sources a trace holds (the kernels' own lines; the rest blank), for paths the upload
        did not bring as files."""
        for path, text in sources.items():
            if path not in self.state.sources:
                self.state.add_source(path, text.encode("utf-8", "surrogatepass"), text)


def _counts(record: CompilationRecord) -> dict[str, int]:
    """Snapshots per banner kind; TileLang's TVMScript ones only where there are some."""
    counts = {kind: record.count(kind) for kind in ("mlir", "internal", "llvm")}
    tvmscript = record.count("tvmscript")
    return {**counts, "tvmscript": tvmscript} if tvmscript else counts


def _inherit_target(rows: list[Compilation]) -> None:
    """A failed compilation made from a diagnostic has no IR to read its target from. When the other
    compilations of the diagnostic's own log (one process wrote it) agree on the target in Triton's
    form (`cuda:90`; an LLVM triple says too little) or Triton version, it was compiled by that
    process for it too; otherwise the field stays unknown. Other logs of the upload (the demo holds
    several captures, for other GPUs) say nothing about this one."""
    for row in rows:
        if row.origin != "diagnostic" or row.log_name is None:
            continue
        others = [other for other in rows if other.origin != "diagnostic" and other.log_name == row.log_name]
        if not others:
            continue
        for field_name in ("target", "triton_version"):
            values = {getattr(other, field_name) for other in others}
            if len(values) != 1 or None in values:
                continue
            (value,) = values
            if field_name == "target" and ":" not in value:
                continue  # an LLVM triple (a log of LLVM dumps alone) names no GPU: cuda:90 and hip alike
            if getattr(row, field_name) is None:
                setattr(row, field_name, value)
