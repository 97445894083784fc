"""tritonparse traces into an ingest: each compilation event becomes a cache-like folder (its stage
texts as artifacts, its metadata), so app/ingest/linking.py ties it to the same kernel's pass dumps exactly
as it ties a cache folder; launches wait, by kernel hash, for the compilation rows they belong to.

One compilation per kernel hash, as tritonparse reports them: a hash traced twice (a cache hit, a
second process) keeps its first compilation event, and a real event replaces one tritonparse inferred
from a launch. A compilation from an autotuning call carries its config and what the autotuner made
of it in its metadata (`config`, `autotune`), for the variants view.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from app.ingest.linking import CacheFolder, Links
from app.store.blobs import BlobWriter, sha256
from parsers.caches import cache
from parsers.logs.compilations import CompilationRecord
from parsers.traces.tritonparse import (
    TraceAutotune,
    TraceCompilation,
    TraceLaunch,
    TraceProblem,
    TraceSkipped,
    config_matches,
    kernel_config,
    read_trace,
)

MAX_LAUNCHES_PER_KERNEL = 1000  # launch rows kept per compilation; the rest are counted
MAX_LAUNCHES = 100_000  # launch rows kept per upload
LAUNCH_BATCH = 5000  # launch rows per INSERT
MAX_SOURCE_LINE = 100_000  # a traced Python line numbered beyond this is not laid out as a source
MAX_PATH = 1000  # the path columns' width
_MATCHED_KINDS = ("ttir", "ttgir", "glir", "source")
_LAUNCH_CONFIG = ("num_warps", "num_stages", "num_ctas", "maxnreg", "shared")
FAKE_REASON = ("tritonparse saw only launches of this kernel (it was compiled, or loaded from Triton's "
               "cache, before tracing started): no IR")


@dataclass
class _LaunchRow:
    """What a launch row keeps of its event (the kernel's whole metadata stays with the compilation)."""

    line: int
    grid: list | None
    arguments: str  # as JSON text: a tenth of the memory of the dicts, for traces of many launches
    config: dict
    benchmark: bool


@dataclass
class _Traced:
    """One compilation of a trace, its texts already stored: only digests, metadata and launch rows
    are held."""

    event: TraceCompilation
    folder: CacheFolder
    launches: list[_LaunchRow] = field(default_factory=list)
    launch_count: int = 0
    benchmark_count: int = 0
    session: str | None = None  # the autotune session of its compile or of its launches
    argument_names: list[str] = field(default_factory=list)  # from its first launch, in signature order


class TraceCollector:
    def __init__(self, blobs: BlobWriter, problem: Callable[..., None]) -> None:
        self.blobs = blobs
        self.problem = problem
        self.by_hash: dict[str, _Traced] = {}
        self.unhashed: list[_Traced] = []
        self.autotunes: list[TraceAutotune] = []
        self.winners: dict[str, set[str]] = {}  # autotune session -> hashes the program itself launched
        self.fragments: dict[str, dict[int, str]] = {}  # Python path -> line number -> text
        self.kept_launches = 0
        self.dropped_launches = 0

    # -- reading ------------------------------------------------------------------------------------
    def read(self, path: str, stream: BinaryIO) -> str:
        """Read one trace file; the note for its input row."""
        counts = {"compilation": 0, "launch": 0, "autotune": 0, "duplicate": 0}
        skipped: dict[str, int] = {}
        for record in read_trace(stream):
            if isinstance(record, TraceCompilation):
                counts["compilation"] += 1
                if not self._add_compilation(path, record):
                    counts["duplicate"] += 1
            elif isinstance(record, TraceLaunch):
                counts["launch"] += 1
                self._add_launch(record)
            elif isinstance(record, TraceAutotune):
                counts["autotune"] += 1
                self.autotunes.append(record)
            elif isinstance(record, TraceProblem):
                self.problem("warning", f"tritonparse trace: {record.message}", path=path, line=record.line)
            elif isinstance(record, TraceSkipped):
                skipped = record.counts
        note = (f"tritonparse trace: {counts['compilation']} compilations, {counts['launch']} launches, "
                f"{counts['autotune']} autotune results")
        if counts["duplicate"]:
            note += f"; {counts['duplicate']} compilations of a kernel hash already read (kept once)"
        if skipped:
            note += "; not read: " + ", ".join(f"{count} {name} events" for name, count in sorted(skipped.items()))
        if not any(counts.values()):
            self.problem("warning", "a tritonparse trace with no compilation, launch or autotune event", path=path)
        return note

    def _add_compilation(self, path: str, event: TraceCompilation) -> bool:
        known = self.by_hash.get(event.hash) if event.hash else None
        if known is not None and not (known.event.fake and not event.fake):
            return False
        folder = CacheFolder(_clip(f"{path}#{(event.hash or str(event.line))[:16]}"), origin="trace")
        for stage in event.stages:
            data = stage.text.encode("utf-8", "surrogatepass")
            digest = sha256(data)
            blob = self.blobs.put(data, digest)
            match = sha256(data.rstrip(b"\r\n")) if stage.kind in _MATCHED_KINDS else None
            folder.add(stage.kind, _clip(stage.path or stage.name), len(data), digest, blob, match)
        event.stages = []  # stored: the texts are not held while the rest of the upload is read
        source = event.python_source
        if source is not None:
            data = source.code.encode("utf-8", "surrogatepass")
            digest = sha256(data)
            name = _clip(source.path or f"{event.kernel}.py")
            folder.add("python", name, len(data), digest, self.blobs.put(data, digest), None)
            if source.path and source.start_line <= MAX_SOURCE_LINE:
                lines = self.fragments.setdefault(_clip(source.path), {})
                for offset, text in enumerate(source.code.splitlines()):
                    lines.setdefault(source.start_line + offset, text)
        folder.metadata = self._metadata(event.metadata, path, event.line)
        traced = _Traced(event, folder, session=event.autotune_session)
        if known is not None:  # a real compilation replaces the one inferred from its launches
            traced.launches, traced.launch_count = known.launches, known.launch_count
            traced.benchmark_count, traced.argument_names = known.benchmark_count, known.argument_names
            traced.session = traced.session or known.session
        if event.hash:
            self.by_hash[event.hash] = traced
        else:
            self.unhashed.append(traced)
        return True

    def _metadata(self, raw: dict, path: str | None, line: int) -> cache.KernelMetadata | None:
        metadata, problems = cache.read_metadata(json.dumps(raw).encode())
        for problem in problems:
            if path is not None and not problem.startswith("a .json file that is not"):
                self.problem("warning", f"tritonparse trace: {problem}", path=path, line=line)
        if metadata is not None:
            metadata.raw = dict(raw)
            # the columns these fill are this wide; a longer value is not a real kernel's
            metadata.name = metadata.name[:500] if metadata.name else None
            metadata.target = metadata.target[:100] if metadata.target else None
            metadata.triton_version = metadata.triton_version[:50] if metadata.triton_version else None
        return metadata

    def _add_launch(self, launch: TraceLaunch) -> None:
        if launch.autotune_session and not launch.benchmark and launch.hash:
            self.winners.setdefault(launch.autotune_session, set()).add(launch.hash)
        key = launch.hash or f"name:{launch.kernel}"  # launches without a hash: one compilation per kernel
        traced = self.by_hash.get(key)
        if traced is None:
            # No compilation event (yet) for its kernel: one inferred from the launch, as tritonparse
            # does, which a compilation event later in the trace replaces.
            event = TraceCompilation(launch.line, launch.kernel, launch.hash, dict(launch.metadata), [], None,
                                     None, fake=True)
            folder = CacheFolder(_clip(f"launches#{key[:80]}"), origin="trace")
            folder.metadata = self._metadata(launch.metadata, None, launch.line)
            traced = _Traced(event, folder)
            self.by_hash[key] = traced
        traced.launch_count += 1
        traced.benchmark_count += launch.benchmark
        traced.session = traced.session or launch.autotune_session
        if not traced.argument_names:
            traced.argument_names = list(launch.arguments)
        if len(traced.launches) < MAX_LAUNCHES_PER_KERNEL and self.kept_launches < MAX_LAUNCHES:
            config = {k: launch.metadata[k] for k in _LAUNCH_CONFIG if k in launch.metadata}
            arguments = json.dumps(launch.arguments, separators=(",", ":"))
            traced.launches.append(_LaunchRow(launch.line, launch.grid, arguments, config, launch.benchmark))
            self.kept_launches += 1
        else:
            self.dropped_launches += 1

    # -- after every file was read ------------------------------------------------------------------
    def finish(self, folders: dict[str, CacheFolder]) -> tuple[list[tuple[CompilationRecord, CacheFolder]], dict[str, str]]:
        """Add the traced compilations to `folders` (merged into an uploaded cache folder of the same
        hash, if any). Returns the compilations no folder stands for (inferred from launches alone,
        or from launches with no compilation event) and the Python sources the traces hold, as
        {path: text} with the lines they did not hold left blank, so that loc() line numbers land."""
        cached = {folder.metadata.hash: folder for folder in folders.values()
                  if folder.metadata is not None and folder.metadata.hash and folder.origin != "trace"}
        made: list[tuple[CompilationRecord, CacheFolder]] = []
        for traced in self._all():
            self._describe(traced)
            folder = traced.folder
            own = cached.get(traced.event.hash or "")
            if own is not None:
                have = {(artifact["kind"], artifact["sha256"]) for artifact in own.files}
                for artifact in folder.files:
                    if (artifact["kind"], artifact["sha256"]) not in have:
                        own.files.append(artifact)
                if own.metadata is not None and folder.metadata is not None:
                    own.metadata.raw = {**folder.metadata.raw, **own.metadata.raw,
                                        **{k: folder.metadata.raw[k] for k in ("config", "autotune") if k in folder.metadata.raw}}
                traced.folder = own
            elif folder.files:
                folders[folder.path] = folder
            else:
                record = CompilationRecord(traced.event.kernel, 0, status_reason=FAKE_REASON)
                made.append((record, folder))
        if self.dropped_launches:
            self.problem("warning", f"{self.dropped_launches} traced launches not stored (irlens keeps "
                         f"{MAX_LAUNCHES_PER_KERNEL} per compilation, {MAX_LAUNCHES} per upload); they are counted")
        sources = {path: "\n".join(lines.get(number, "") for number in range(1, min(max(lines), MAX_SOURCE_LINE) + 1)) + "\n"
                   for path, lines in self.fragments.items() if lines}
        return made, sources

    def _all(self) -> list[_Traced]:
        return list(self.by_hash.values()) + self.unhashed

    def _describe(self, traced: _Traced) -> None:
        """The config a compilation was made with and, in an autotuning call, how it fared."""
        metadata = traced.folder.metadata
        if metadata is None:
            return
        event = traced.event
        config = kernel_config(event, traced.argument_names)
        metadata.raw["config"] = config
        metadata.raw["launches"] = traced.launch_count
        session = traced.session
        if session is None:
            return
        autotune: dict[str, Any] = {
            "session": hashlib.sha256(session.encode()).hexdigest()[:12],
            "benchmark_launches": traced.benchmark_count,
            "winner": event.hash in self.winners.get(session, set()) if event.hash else None,
        }
        for result in self.autotunes:
            if not self._same_session(result, session):
                continue
            if result.winner_hash and event.hash:
                autotune["winner"] = result.winner_hash == event.hash
            if result.best_config:
                autotune["best"] = config_matches(config, result.best_config)
            for text, timings in result.configs_timings.items():
                if config_matches(config, text):
                    autotune["config_text"] = text
                    autotune["timings_ms"] = timings
        metadata.raw["autotune"] = autotune

    def _same_session(self, result: TraceAutotune, session: str) -> bool:
        """An autotune event carries its own stack; a parsed trace's analysis names tritonparse's
        session id, so it is matched through the compilation it chose."""
        if result.winner_hash:
            winner = self.by_hash.get(result.winner_hash)
            return winner is not None and winner.event.autotune_session == session
        return result.session == session

    def launch_rows(self, records: list[tuple[CompilationRecord, int]], links: Links) -> Iterator[list[dict]]:
        """Launch rows for the compilation rows, (record, compilation pk) pairs linked by kernel hash,
        in batches; each compilation's launches are let go once handed out."""
        by_folder = {id(traced.folder): traced for traced in self._all()}
        batch: list[dict] = []
        for record, pk in records:
            for folder in links.get_all(id(record)):
                traced = by_folder.get(id(folder))
                if traced is None:
                    continue
                launches, traced.launches = traced.launches, []
                for index, launch in enumerate(launches):
                    batch.append({
                        "compilation_pk": pk, "index": index, "line": launch.line, "grid": launch.grid,
                        "arguments": json.loads(launch.arguments), "config": launch.config,
                        "benchmark": launch.benchmark,
                    })
                if len(batch) >= LAUNCH_BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch


def _clip(path: str) -> str:
    """A path for a 1000-character column: its tail, which names the file."""
    return path if len(path) <= MAX_PATH else "…" + path[-(MAX_PATH - 1):]
