"""Tie the pieces of an upload together once all of it has been read.

- cache and kernel-dump folders to the compilations whose dumps they match (by the cached .ttgir's
  hash among the compilation's snapshots, then .ttir, then an unambiguous kernel name);
- error diagnostics to the compilation they belong to (the one in progress when it failed: a pass
  failed, LLVM's code generation gave up, or it failed before any dump), or to a new `failed`
  compilation of their kernel: the function around an MLIR error's source line (its outermost
  caller's) in an uploaded source, the `def NAME(` of a CompilationError's excerpt, or a
  traceback's frame inside a jit function;
- timing reports to the compilation that printed them.
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from app.ingest.state import LogResult
from parsers.caches.cache import KernelMetadata
from parsers.locations.loc import match_source
from parsers.logs.compilations import CompilationRecord
from parsers.logs.diagnostics import Diagnostic
from parsers.logs.timing import TimingReport

_STARTS = ("Inliner", "InlinerPass", "GluonInline")
ENTRY_STAGES = frozenset({"source", "ttir", "glir", "ttgir", "llir", "ptx", "amdgcn"})  # what Triton itself writes


@dataclass
class CacheFolder:
    path: str
    metadata: KernelMetadata | None = None
    files: list[dict] = field(default_factory=list)  # Artifact row fields
    paths: set[str] = field(default_factory=set)  # the files' paths, to spot one uploaded twice
    match_hashes: dict[str, str] = field(default_factory=dict)  # stage -> hash of its stripped text
    matched_by: str | None = None
    origin: str = "cache"  # "trace": a tritonparse compilation event standing in for a cache folder
    resources: dict | None = None  # what its cubin or .amdgcn says (app/ingest/binary_resources.py)
    binary_resources: dict[str, dict] = field(default_factory=dict)  # each cubin's, by path

    def add(self, kind: str, path: str, size: int, sha: str, blob: str | None, match: str | None) -> None:
        self.files.append({"kind": kind, "path": path, "size": size, "sha256": sha, "blob": blob})
        self.paths.add(path)
        if match:
            self.match_hashes[kind] = match

    @property
    def is_entry(self) -> bool:
        """Looks like what Triton writes: its kernel metadata, or a stage of the IR (a TRITON_KERNEL_DUMP
        folder has no metadata). A binary, a .sass or a stray JSON alone (a folder of cuobjdump output, a
        config file beside a cache) is no compilation of its own."""
        if self.origin == "trace" or self.metadata is not None:
            return True
        kinds = {artifact["kind"] for artifact in self.files}
        if kinds & ENTRY_STAGES or "hsaco" in kinds:
            return True
        # a cubin alone is one when it reads as a kernel binary (its registers show): random bytes are not
        return "cubin" in kinds and bool((self.resources or {}).get("kernels"))

    @property
    def kernel(self) -> str | None:
        if self.metadata and self.metadata.name:
            return self.metadata.name
        for artifact in self.files:
            if artifact["kind"] not in ("grp", "json"):
                return posixpath.basename(artifact["path"]).rsplit(".", 1)[0]
        return None


class Links(dict):
    """id(compilation) -> its primary folder (for metadata); `extra` holds further folders."""

    def __init__(self) -> None:
        super().__init__()
        self.extra: dict[int, list[CacheFolder]] = {}

    def add(self, compilation: CompilationRecord, folder: CacheFolder) -> None:
        if id(compilation) in self:
            self.extra.setdefault(id(compilation), []).append(folder)
        else:
            self[id(compilation)] = folder

    def get_all(self, key: int) -> list[CacheFolder]:
        return ([self[key]] if key in self else []) + self.extra.get(key, [])


def _snapshot_hashes(compilation: CompilationRecord) -> set[str]:
    return set(compilation.snapshots.blobs())


def link_caches(
    compilations: list[CompilationRecord], folders: dict[str, CacheFolder]
) -> tuple[Links, list[CompilationRecord]]:
    links = Links()
    cache_only: list[CompilationRecord] = []
    hashes = {id(c): _snapshot_hashes(c) for c in compilations} if folders else {}
    # Cache folders (with metadata) first: they carry the metadata a compilation shows.
    ordered = sorted(folders.values(), key=lambda folder: folder.metadata is None)
    by_name: dict[str | None, int] = {}
    for folder in ordered:
        if folder.metadata is not None:
            by_name[folder.kernel] = by_name.get(folder.kernel, 0) + 1
    for folder in ordered:
        if not any(f["kind"] not in ("grp",) for f in folder.files):
            continue
        target = _match(folder, compilations, hashes, links, by_name)
        if target is None and folder.metadata is None:
            target = _match_dsl_keep(folder, compilations, links)
        if target is None and folder.metadata is None:
            target = _match(folder, cache_only, {id(c): _folder_hashes(links, c) for c in cache_only}, None, {})
        if target is None and not folder.is_entry:
            continue  # its files stay inputs, and CacheFiles.check said why
        if target is None:
            target = CompilationRecord(folder.kernel, 0)
            cache_only.append(target)
            folder.matched_by = None
        links.add(target, folder)
    return links, cache_only


_ARCH_SUFFIX = re.compile(r"\.(?:sm|compute)_\w+$")


def kept_stem(path: str) -> str:
    """`<fn>` of a DSL's kept artifact `<dir>/<fn>.sm_90a.cubin`, `<fn>.ptx`, `<fn>.sass`."""
    return _ARCH_SUFFIX.sub("", posixpath.basename(path).rsplit(".", 1)[0])


def dsl_keep_group(folder: CacheFolder) -> str | None:
    """`<folder>/<fn>` when a folder's files are one kernel's kept artifacts without Triton's IR or
    metadata (CuTe DSL's CUTE_DSL_KEEP: `<fn>.ptx`, `<fn>.sm_90a.cubin`, `<fn>.sass`; a cuTile export's
    `<fn>.cubin`): the per-pass group (app/ingest/pass_files.py) they belong with."""
    names = {kept_stem(f["path"]) for f in folder.files}
    if len(names) != 1 or any(f["kind"] in ("ttir", "ttgir", "json") for f in folder.files):
        return None
    return posixpath.join(folder.path, names.pop())


def _match_dsl_keep(folder: CacheFolder, compilations: list[CompilationRecord], links: Links) -> CompilationRecord | None:
    """A DSL's kept artifacts join the one per-pass compilation of their group (its kept IR files, or
    its decoded bytecode) in the same folder: no hash ties them, only the name and the place."""
    wanted = dsl_keep_group(folder)
    found = [c for c in compilations if c.generic and wanted is not None and c.files == wanted
             and id(c) not in links]
    if len(found) != 1:
        return None
    folder.matched_by = "name"
    return found[0]


def _folder_hashes(links: Links, compilation: CompilationRecord) -> set[str]:
    return {h for folder in links.get_all(id(compilation)) for h in folder.match_hashes.values()}


def _match(
    folder: CacheFolder,
    candidates: list[CompilationRecord],
    hashes: dict[int, set[str]],
    links: Links | None,
    by_name: dict[str | None, int],
) -> CompilationRecord | None:
    same_name = [c for c in candidates if c.kernel == folder.kernel]
    if links is not None and folder.metadata is not None:
        same_name = [c for c in same_name if id(c) not in links]
    for stage in ("ttgir", "ttir", "glir", "source"):
        wanted = folder.match_hashes.get(stage)
        if wanted is None:
            continue
        for compilation in same_name:
            if wanted in hashes[id(compilation)]:
                folder.matched_by = stage
                return compilation
    # Fall back on the name only when nothing else could be meant.
    same_name_all = [c for c in candidates if c.kernel == folder.kernel]
    if links is not None and len(same_name_all) == 1 and len(same_name) == 1 and by_name.get(folder.kernel) == 1:
        folder.matched_by = "name"
        return same_name[0]
    return None


# -- diagnostics -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Function:
    name: str
    first: int
    last: int
    jit: bool  # decorated with triton.jit, gluon.jit, ... : a kernel (or a helper it calls)


def _is_jit(decorator: ast.expr) -> bool:
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", None)
    return name == "jit"


@functools.lru_cache(maxsize=64)
def _functions(text: str) -> tuple[_Function, ...]:
    """Every function in a source, outermost first (parsed once per text)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    found = [
        _Function(node.name, node.lineno, getattr(node, "end_lineno", None) or node.lineno,
                  any(_is_jit(d) for d in node.decorator_list))
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    return tuple(sorted(found, key=lambda function: function.first))


def _enclosing_function(text: str, line: int, *, jit_only: bool = False) -> str | None:
    best: _Function | None = None
    for function in _functions(text):
        if function.first <= line <= function.last and (function.jit or not jit_only):
            best = function  # sorted by first line: the innermost wins
    return best.name if best is not None else None


def kernel_for_location(
    file: str | None, line: int | None, sources: dict[str, str], *, jit_only: bool = False
) -> str | None:
    if not file or not line:
        return None
    path = match_source(file, sources.keys())
    return _enclosing_function(sources[path], line, jit_only=jit_only) if path else None


# MLIR's call stack under an error in an inlined helper: one note per caller, outermost last.
_CALLED_FROM = re.compile(r"^(?P<file>.+?):(?P<line>\d+):\d+: note: called from\s*$")


def kernel_of_diagnostic(diag: Diagnostic, sources: dict[str, str]) -> str | None:
    """The kernel a diagnostic is about.

    mlir: the function around the outermost "called from" note's file:line in an uploaded source, else
    around its own (an error inside a helper names the kernel that called it, not the helper).
    compilation_error: the `def NAME(` of its source excerpt. Otherwise (a traceback, or an excerpt
    that starts below the def line): the first frame, in printed order, that lies in a jit function
    of an uploaded source; a traceback prints the outermost first, so that is the kernel launched,
    not a helper it calls. An LLVM fatal error names no kernel."""
    if diag.kind == "mlir":
        for note in reversed(diag.notes):
            match = _CALLED_FROM.match(note)
            if match:
                return kernel_for_location(match["file"], int(match["line"]), sources)
        return kernel_for_location(diag.file, diag.line, sources)
    if diag.kind == "llvm":
        return None
    if diag.kernel:
        return diag.kernel
    for file, line in diag.frames:
        kernel = kernel_for_location(file, line, sources, jit_only=True)
        if kernel:
            return kernel
    return None


def _fails_after(compilation: CompilationRecord, line: int) -> bool:
    return any(s.header.failed and s.line > line for s in compilation.snapshots)


def _same_failure(
    preceding: CompilationRecord | None, kernel: str | None, diag: Diagnostic, python_owners: set[int]
) -> CompilationRecord | None:
    """The compilation an error printed after the compilations before it belongs to, among those
    already known, if any. A failing compile prints its MLIR errors, then Python's error ends it, so
    the compilation before the error is the failing one while it holds no Python error yet and:

    - it failed without dumps, made just before by an earlier diagnostic: the MLIR errors that follow
      are the same failure's, whatever function they point into (a helper's line, with no call stack:
      AMD's layout checks), and so is a Python error of the same kernel or of none;
    - a pass of it failed ("IR Dump After X Failed"): the Python error that follows, of the same
      kernel or of none, is the one that ended it;
    - it has dumps and the error is LLVM's fatal one: code generation, after the MLIR passes, gave up
      (the process aborts, so no Python error follows).

    Triton raises a CompilationError while it turns the function into TTIR, before any pass dump
    (tests/fixtures/recompile_add_kernel_triton39.log.gz: add_kernel compiled, then compiled again
    with BLOCK_SIZE=1000), so a compilation that ran to its end is never the failing one: the error
    is a compilation of its own."""
    if preceding is None or id(preceding) in python_owners:
        return None
    python_error = diag.kind in ("traceback", "compilation_error")
    same_kernel = kernel is None or kernel == preceding.kernel
    if not preceding.snapshots and preceding.status == "failed":
        if diag.kind == "mlir" or (python_error and same_kernel):
            return preceding
    elif preceding.failed_pass is not None:
        if python_error and same_kernel:
            return preceding
    elif diag.kind == "llvm" and preceding.snapshots:
        return preceding
    return None


def resolve_diagnostics(
    log: LogResult, sources: dict[str, str]
) -> tuple[list[CompilationRecord], list[tuple[Diagnostic, CompilationRecord | None]]]:
    """Return the log's compilations (failed ones from diagnostics inserted in log order)
    and each diagnostic with the compilation it belongs to (None: the run's own)."""
    compilations = list(log.grouper.compilations)
    inserted = 0
    python_owners: set[int] = set()  # compilations that hold a traceback or CompilationError
    owned: list[tuple[Diagnostic, CompilationRecord | None]] = []
    for diag, before in log.diagnostics:
        position = before + inserted
        preceding = compilations[position - 1] if position else None
        kernel = kernel_of_diagnostic(diag, sources)
        is_error = diag.severity == "error"
        owner: CompilationRecord | None = None
        # MLIR prints a failing pass's error, then its "After ... Failed" dump: the error is that
        # compilation's. An error after a compilation ran to its end belongs to a new one, even of
        # the same kernel (the same function compiled again with other constants).
        if preceding is not None and _fails_after(preceding, diag.first_line):
            owner = preceding
        elif is_error:
            owner = _same_failure(preceding, kernel, diag, python_owners)
        if owner is None and kernel and is_error:
            owner = CompilationRecord(kernel, 0, status="failed")
            compilations.insert(position, owner)
            inserted += 1
        elif owner is None and kernel and preceding is not None and preceding.kernel == kernel:
            owner = preceding
        elif owner is None and kernel is None and not is_error and diag.kind == "mlir" and preceding is not None:
            # A remark, warning or note of MLIR (MLIR_ENABLE_DIAGNOSTICS=remarks) printed by a pass of
            # the compilation in progress, whose source was not uploaded: that compilation's.
            owner = preceding
        if owner is not None and is_error:
            # The first error of a compile that had not failed yet says why (over "the log starts
            # in the middle of this compilation", say); a failed one keeps its first reason.
            if owner.status != "failed" or not owner.status_reason:
                owner.status_reason = diag.message
            owner.status = "failed"
            if diag.kind in ("traceback", "compilation_error"):
                python_owners.add(id(owner))
        owned.append((diag, owner))
    for compilation in compilations:
        if compilation.failed_pass is not None and not compilation.status_reason:
            compilation.status_reason = f"pass {compilation.failed_pass} failed"
    return compilations, owned


# -- timing --------------------------------------------------------------------------
def attach_timings(
    logs: list[LogResult],
    compilations: list[CompilationRecord],
    cache_only: list[CompilationRecord],
    problem: Callable[..., None],
) -> dict[int, list[TimingReport]]:
    """A report follows the dumps of the stage it timed, so it belongs to the latest compilation;
    reports from compiles without dumps are tied to a compilation only when that is unambiguous."""
    timings: dict[int, list[TimingReport]] = {}
    orphan_groups: list[list[TimingReport]] = []
    for log in logs:
        for report, current in log.timings:
            first = report.entries[0].name if report.entries else ""
            starts = first in _STARTS
            if current is not None and not (starts and timings.get(id(current))):
                timings.setdefault(id(current), []).append(report)
            elif starts or not orphan_groups:
                orphan_groups.append([report])
            else:
                orphan_groups[-1].append(report)
    untimed = [c for c in cache_only if id(c) not in timings]
    if len(orphan_groups) == 1 and len(untimed) == 1:
        timings[id(untimed[0])] = orphan_groups[0]
    elif orphan_groups:
        problem(
            "warning",
            f"{sum(len(g) for g in orphan_groups)} timing reports could not be tied to one compilation; "
            "they stay in the log text",
        )
    return timings
