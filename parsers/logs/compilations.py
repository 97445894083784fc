"""Group dumps into compilations (one call of Triton's compiler each), in log order.

Boundary rule (../shared/corpus/README.md): a compilation starts at a module-scope dump of the
first TTIR pass (Inliner / InlinerPass), or at GluonInline when it does not directly follow
SCFToControlFlow(Pass) (inside the LLVM stage GluonInline runs in every compilation). A fork of Triton
may run passes of its own before the Inliner (TLX's TritonTLXFixup): a compilation starts at the first
dump of its module, whatever the pass, so a kernel's dump with no compilation open for it opens one
(partial, "the log starts in the middle", until its Inliner comes: then the compile started at that
first dump). Such a first pass, once seen before an Inliner and never after one, starts the next
compilation of the same kernel too.

Concurrent compiles interleave whole dumps, so a dump goes to the open compilation whose kernel
it holds, not blindly to the latest one. Pipeliner-internal dumps ignore MLIR_ENABLE_DUMP's kernel
filter: those of an undumped kernel go to the compilation in progress (as the corpus's expected
counts do), or, before any compilation, are kept apart as orphans.

Other pipelines (mlir-opt, IREE, torch-mlir, LLVM's opt/llc/clang -print-after-all): a dump that is
not Triton's and comes outside any Triton compilation opens a generic compilation, which takes every
following dump. One command line is one compilation; the next one starts at a module-level dump
that shows the pipeline starting again: its first dump again (the same pass, when and body: the
same command run twice into one log), its first pass again on a module that defines none of the
functions the compilation's first module defined (another kernel), LLVM IR again after machine
code (code generation is a pipeline's last phase), an LLVM module of another name (`; ModuleID`:
another input), or a Triton compilation's start. A log of Triton's LLVM dumps alone
(LLVM_IR_ENABLE_DUMP=1 without MLIR dumps) is split so, one compilation per compile. A pipeline that
runs its first pass again on the transformed IR (opt's verifier, first and last) stays one
compilation.

Each snapshot is compared with the previous dump of the same scope (parsers/logs/scopes.py: the module,
or one function, loop or op): that one is its `base`, and `changed` says whether the body differs.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

from parsers.logs import scopes
from parsers.records import Dump, DumpHeader

# What kernel_of looks for (the specification; running these over whole bodies was a quarter of the
# ingest's time, see bench/NOTES.md, so kernel_of finds the literal head first).
_KERNEL_TT = re.compile(rb"^\s*tt\.func public @([^\s(]+)\(", re.MULTILINE)
_KERNEL_LLVM = re.compile(rb"^\s*llvm\.func @([^\s(]+)\(([^\n]*)", re.MULTILINE)
_TARGET = re.compile(rb'ttg\.target = "([^"]+)"|triton_gpu\.target = "([^"]+)"')
_INLINER = {"Inliner", "InlinerPass"}
_SCF_TO_CF = {"SCFToControlFlow", "SCFToControlFlowPass"}
_TO_TTGIR = re.compile(r"^convert-triton-to-tritongpu$|^ConvertTritonToTritonGPU")
_TO_LLVM = re.compile(r"^convert-triton-\w*gpu-to-llvm$|^ConvertTriton\w*GPUToLLVM")

STAGES = ("ttir", "ttgir", "llvm-dialect", "llvm-ir")
GENERIC_MLIR_STAGE = "mlir"  # a generic pipeline's MLIR dumps: no Triton stage to name
# A Triton dialect op or attribute anywhere in a body: the dump is Triton's, not a generic pipeline's.
_TRITON_DIALECT = re.compile(rb"(?<![\w.])(?:tt|ttg|ttng|triton_gpu|triton_nvidia_gpu|ttig)\.")
_LLVM_MODULE_NAME = re.compile(rb'^(?:source_filename = "([^"\n]*)"|; ModuleID = \'([^\'\n]*)\')', re.MULTILINE)
_MLIR_TRANSLATED = b"LLVMDialectModule"  # the name mlir::translateModuleToLLVMIR gives every module
_TRIPLE = re.compile(rb'^target triple = "([^"\n]*)"', re.MULTILINE)
_MLIR_MODULE_NAME = re.compile(rb"^module @([\w$.\-]+|\"[^\"\n]*\")", re.MULTILINE)
_MLIR_SYMBOL = re.compile(rb"^\s*[\w.]*func(?:\.func)? (?:public |private )?@([\w$.\-]+|\"[^\"\n]*\")\(", re.MULTILINE)
_LLVM_DEFINED = re.compile(rb"^define [^@\n]*@([\w$.\-]+|\"[^\"\n]*\")\(", re.MULTILINE)


# The patterns above, anchored on their literal head so the regex engine can skip to it; whether the
# head starts its line (after blanks) is checked afterwards. MLIR quotes a symbol that is not a bare
# identifier (`@"name with spaces"`), escaping `"`, `\` and unprintable bytes as `\XX` (hex).
_QUOTED = rb'"((?:[^"\\\n]|\\.)*)"'
_TT_FUNC = re.compile(rb"tt\.func public @(?:" + _QUOTED + rb"|([^\s(]+))\(")
_LLVM_FUNC = re.compile(rb"llvm\.func @(?:" + _QUOTED + rb"|([^\s(]+))\(([^\n]*)")
_ESCAPE = re.compile(rb"\\([0-9a-fA-F]{2}|.)")
_BARE_SYMBOL = re.compile(r"[A-Za-z_][\w$.]*\Z")


def _symbol(match: re.Match[bytes]) -> str:
    """The function name a _TT_FUNC / _LLVM_FUNC match holds, unquoted."""
    quoted, bare = match.group(1), match.group(2)
    if quoted is None:
        return bare.decode("utf-8", "replace")
    raw = _ESCAPE.sub(lambda m: bytes.fromhex(m.group(1).decode()) if len(m.group(1)) == 2 else m.group(1), quoted)
    return raw.decode("utf-8", "replace")


def printed_symbol(name: str) -> bytes:
    """`@name(` as MLIR prints a call or definition of the function `name`: quoted when not bare."""
    if _BARE_SYMBOL.match(name):
        return b"@" + name.encode() + b"("
    escaped = "".join(c if c.isprintable() and c not in '"\\' else "".join(f"\\{b:02X}" for b in c.encode())
                      for c in name)
    return b'@"' + escaped.encode() + b'"('


def _at_line_start(body: bytes, at: int) -> bool:
    """Whether only blanks precede `at` on its line: `^\\s*` with re.M."""
    line_start = body.rfind(b"\n", 0, at) + 1
    return line_start == at or not body[line_start:at].strip()


def kernel_of(body: bytes) -> str | None:
    """The kernel a module dump holds: its public tt.func, or the llvm.func that is not an extern."""
    at = body.find(b"tt.func public @")  # bytes.find skips ahead faster than the regex engine
    while at >= 0:
        match = _TT_FUNC.match(body, at)
        if match and _at_line_start(body, at):
            return _symbol(match)
        at = body.find(b"tt.func public @", at + 1)
    # In the LLVM dialect, skip declarations (externs such as __nv_expf or __ockl_*): a definition's
    # line ends with "{"; prefer one marked as a kernel.
    first = None
    for match in _LLVM_FUNC.finditer(body):
        rest = match.group(3)
        if not rest.rstrip().endswith(b"{") or not _at_line_start(body, match.start()):
            continue
        if b"kernel" in rest:
            return _symbol(match)
        if first is None:
            first = _symbol(match)
    return first


class _BodyFacts:
    """kernel_of and scopes.level_and_name of the last few bodies, by identity: the log scanner hands
    out the same bytes object again for a body equal to a recent one (an unchanged pass)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self.entries: dict[int, tuple[bytes, str | None]] = {}
        self.levels: dict[int, tuple[bytes, dict[tuple[str, str | None], tuple[str, str | None]]]] = {}

    def kernel(self, body: bytes) -> str | None:
        entry = self.entries.get(id(body))
        if entry is not None and entry[0] is body:
            return entry[1]
        kernel = kernel_of(body)
        if len(self.entries) >= self.size:
            del self.entries[next(iter(self.entries))]
        self.entries[id(body)] = (body, kernel)
        return kernel

    def level_and_name(self, header: DumpHeader, body: bytes) -> tuple[str, str | None]:
        """scopes.level_and_name, computed once per body and banner kind and scope (all of the banner it
        reads): consecutive passes that changed nothing print one body under banners that differ only
        in the pass's name."""
        entry = self.levels.get(id(body))
        if entry is None or entry[0] is not body:
            if len(self.levels) >= self.size:
                del self.levels[next(iter(self.levels))]
            entry = self.levels[id(body)] = (body, {})
        key = (header.kind, header.scope)
        found = entry[1].get(key)
        if found is None:
            found = entry[1][key] = scopes.level_and_name(header, body)
        return found


def target_of(body: bytes) -> str | None:
    match = _TARGET.search(body)
    if not match:
        return None
    return (match.group(1) or match.group(2)).decode("utf-8", "replace")


def starts_compilation(header: DumpHeader, previous_pass: str | None) -> bool:
    if header.kind != "mlir" or header.when != "before" or not header.is_module_scope:
        return False
    if header.pass_name in _INLINER:
        return True
    return header.pass_name == "GluonInline" and previous_pass not in _SCF_TO_CF


@dataclass(slots=True)
class SnapshotRecord:
    """A dump as the compilation keeps it: everything but the body, which the store holds by hash."""

    index: int
    header: DumpHeader
    line: int
    blob: str
    size: int
    line_count: int
    stage: str
    changed: bool
    level: str = scopes.MODULE  # what the body holds: module, function, loop, machine, op
    base: int | None = None  # index of the previous snapshot of the same scope, compared with
    trace: tuple[str, ...] = ()  # passes LLVM's pass manager ran since the previous dump without one
    unit: str | None = None  # the function, loop or op the body holds (parsers/logs/scopes.py), if named

    @property
    def scope(self) -> str | None:
        """The banner's scope, or the unit the body holds where the banner names none (a legacy
        LLVM banner says "[module]" for every dump)."""
        if self.unit and self.level != scopes.MODULE and self.header.scope in (None, "[module]", "machine"):
            return self.unit
        return self.header.scope


_NO_BASE = -1


class _Interned:
    """Distinct values (headers, stages, blob hashes) by number, shared by a log's compilations."""

    __slots__ = ("numbers", "values")

    def __init__(self) -> None:
        self.values: list = []
        self.numbers: dict = {}  # value (or id(value) for headers) -> number

    def number(self, value, key=None) -> int:
        key = value if key is None else key
        number = self.numbers.get(key)
        if number is None:
            number = self.numbers[key] = len(self.values)
            self.values.append(value)
        return number


class SnapshotList:
    """A compilation's snapshots, stored as columns of numbers (a few dozen bytes a snapshot, where
    SnapshotRecord objects take a few hundred: a 2 GB log has 60,000 snapshots). Reads like a list of
    SnapshotRecord: len, index, iterate, append."""

    __slots__ = ("_columns", "_tables")

    def __init__(self, tables: tuple[_Interned, ...] | None = None) -> None:
        # headers, blobs, stages, levels, traces, units
        self._tables = tables or tuple(_Interned() for _ in range(6))
        # header, line, blob, size, line_count, stage, changed, level, base, trace, unit: 64-bit numbers each
        self._columns = tuple(array("q") for _ in range(11))

    def append(self, record: SnapshotRecord) -> None:
        headers, blobs, stages, levels, traces, units = self._tables
        values = (
            headers.number(record.header, id(record.header)), record.line, blobs.number(record.blob),
            record.size, record.line_count, stages.number(record.stage), int(record.changed),
            levels.number(record.level), _NO_BASE if record.base is None else record.base, traces.number(record.trace),
            units.number(record.unit),
        )
        for column, value in zip(self._columns, values):
            column.append(value)

    def __len__(self) -> int:
        return len(self._columns[0])

    def __getitem__(self, position: int) -> SnapshotRecord:
        size = len(self)
        index = position + size if position < 0 else position
        if not 0 <= index < size:
            raise IndexError("snapshot index out of range")
        return self._record(index, *(column[index] for column in self._columns))

    def _record(self, index, header, line, blob, length, line_count, stage, changed, level, base, trace, unit):
        headers, blobs, stages, levels, traces, units = (table.values for table in self._tables)
        return SnapshotRecord(
            index, headers[header], line, blobs[blob], length, line_count, stages[stage], bool(changed),
            levels[level], None if base == _NO_BASE else base, traces[trace], units[unit],
        )

    def __iter__(self) -> Iterator[SnapshotRecord]:
        for index, values in enumerate(zip(*self._columns)):
            yield self._record(index, *values)

    def count_kind(self, kind: str) -> int:
        headers = self._tables[0].values
        return sum(1 for header in self._columns[0] if headers[header].kind == kind)

    def count_changed(self) -> int:
        return sum(self._columns[6])

    def __bool__(self) -> bool:
        return len(self) > 0

    def blobs(self) -> list[str]:
        """The blob of each snapshot, in order: what a reader of blobs alone needs, without making a
        SnapshotRecord per snapshot."""
        values = self._tables[1].values
        return [values[blob] for blob in self._columns[2]]

    def headers(self) -> list[DumpHeader]:
        """The snapshots' header objects, each once (equal headers parsed apart stay apart)."""
        values = self._tables[0].values
        return [values[header] for header in set(self._columns[0])]

    def last_header(self) -> DumpHeader:
        return self._tables[0].values[self._columns[0][-1]]

    def last_blob(self) -> str:
        return self._tables[1].values[self._columns[2][-1]]


@dataclass
class CompilationRecord:
    kernel: str | None
    first_line: int
    snapshots: SnapshotList = field(default_factory=SnapshotList)
    target: str | None = None
    status: str = "ok"  # "ok" | "failed" | "partial"
    status_reason: str | None = None
    failed_pass: str | None = None  # the pass of the "IR Dump After X Failed" that ended it
    stage: str = "ttir"
    gluon: bool = False
    generic: bool = False  # not Triton's: another MLIR pipeline, or LLVM's own tools
    first_dump: tuple | None = None  # a generic compilation's first dump: (kind, when, pass, level)
    # scope key -> (index, blob) of its latest snapshot, and the latest function a dump held (the
    # one a legacy loop dump, which names no function, is in)
    scope_last: dict[str, tuple[int, str]] = field(default_factory=dict)
    last_function: str | None = None
    module_id: bytes | None = None  # a generic LLVM compilation's `; ModuleID`
    defined: frozenset[bytes] | None = None  # the functions its first LLVM module dump defines
    machine_code: bool = False  # it has reached code generation (a machine-code dump)
    named_by_module: bool = False  # its name is its module's (else a function's, until a module names it)
    before_start: bool = False  # opened by a dump before its Inliner (GluonInline), which has not come yet
    files: str | None = None  # a per-pass folder's compilation: its folder and file-name prefix

    def count(self, kind: str) -> int:
        return self.snapshots.count_kind(kind)

    @property
    def changed_count(self) -> int:
        return self.snapshots.count_changed()

    @property
    def last_pass(self) -> str | None:
        snapshots = self.snapshots
        return snapshots.last_header().pass_name if snapshots else None


class CompilationGrouper:
    """Feed it dumps in log order; it assigns each to a compilation (or to the orphans)."""

    def __init__(self) -> None:
        self.compilations: list[CompilationRecord] = []
        self.orphans: list[tuple[str | None, SnapshotRecord]] = []
        self._open: dict[str, CompilationRecord] = {}
        self._current: CompilationRecord | None = None
        self._facts = _BodyFacts()
        self._tables = tuple(_Interned() for _ in range(6))  # shared by a log's SnapshotLists
        self._stage_marks: dict[int, tuple[DumpHeader, bool, bool]] = {}  # by header identity
        # (when, pass) of MLIR module dumps seen before a compilation's start, and after one
        self._before_start: set[tuple[str, str]] = set()
        self._after_start: set[tuple[str, str]] = set()

    def add(self, dump: Dump, blob: str, trace: tuple[str, ...] = ()) -> CompilationRecord | None:
        """Assign a dump to its compilation; `trace` is the passes LLVM's pass manager reported
        running since the previous dump without printing one (parsers/logs/pm_trace.py)."""
        header = dump.header
        level, name = self._facts.level_and_name(header, dump.body)
        current = self._current
        if current is not None and current.generic and not (
            # Triton's MLIR dumps never join a generic (or LLVM-only) compilation
            header.kind == "mlir" and (
                starts_compilation(header, None) and self._facts.kernel(dump.body) or _is_triton(dump.body)
            )
        ):
            compilation = current
            if level == scopes.MODULE and _restarts(current, dump, blob, level):
                compilation = self._open_generic(dump)  # the next command line
            kernel = compilation.kernel
        elif header.kind == "llvm" and current is None:
            compilation = self._open_generic(dump)
            kernel = compilation.kernel
        elif header.kind == "llvm":
            # LLVM's printer names no module; it follows the MLIR stage of the same compile.
            compilation = self._current
            kernel = compilation.kernel if compilation else None
        else:
            kernel = self._facts.kernel(dump.body)
            compilation = self._open.get(kernel) if kernel else self._current
            current = self._current
            # Pipeliner-internal dumps ignore the kernel filter; like the corpus counts, they go to
            # the compilation in progress when no dumped kernel of theirs is open.
            if (
                compilation is None and current is not None and current.kernel
                and (header.kind == "internal" or printed_symbol(current.kernel) in dump.body)
            ):
                compilation, kernel = current, current.kernel
            previous = compilation.last_pass if compilation else None
            again = self._starts_again(compilation, header)
            if starts_compilation(header, previous):
                compilation = self._start(compilation, kernel, dump)
            elif compilation is None and header.kind == "mlir" and not _is_triton(dump.body):
                compilation = self._open_generic(dump)
            elif again or (compilation is None and header.kind == "mlir"):
                # A first dump before the Inliner: a fork's own pass, or the log starts in the middle
                # of a compile (its head was cut off); which of the two, only the Inliner can tell.
                compilation = CompilationRecord(kernel, dump.line, SnapshotList(self._tables))
                compilation.before_start = True
                if not again:
                    compilation.status = "partial"
                    compilation.status_reason = "the log starts in the middle of this compilation"
                self.compilations.append(compilation)
            if compilation is not None and kernel:
                self._open[kernel] = compilation
        record = self._record(compilation, dump, blob, level, name, trace)
        if compilation is None:
            self.orphans.append((kernel, record))
            return None
        self._current = compilation
        compilation.snapshots.append(record)
        if compilation.generic:
            _name_generic(compilation, dump.body)
            compilation.machine_code = compilation.machine_code or level == scopes.MACHINE
        elif compilation.target is None and header.kind == "mlir" and compilation.stage != "ttir":
            compilation.target = target_of(dump.body)
        if dump.header.failed:
            self.mark_failed(compilation, header)
        self._advance_stage(compilation, header)
        if header.kind == "mlir" and not compilation.before_start and not compilation.generic:
            self._after_start.add((header.when, header.pass_name))
        compilation.before_start = compilation.before_start and compilation.stage == "ttir"
        return compilation

    def _start(
        self, compilation: CompilationRecord | None, kernel: str | None, dump: Dump
    ) -> CompilationRecord:
        """The compilation an Inliner (GluonInline) dump starts: the kernel's compilation that its own
        first passes opened, else a new one."""
        gluon = dump.header.pass_name == "GluonInline"
        if compilation is None or not compilation.before_start or compilation.status == "failed":
            compilation = CompilationRecord(kernel, dump.line, SnapshotList(self._tables))
            self.compilations.append(compilation)
        else:  # its first passes ran before the Inliner: a fork's, to be known again
            first = {(h.when, h.pass_name) for h in compilation.snapshots.headers() if h.kind == "mlir"}
            self._before_start.update(key for key in first if key not in self._after_start)
        compilation.before_start, compilation.status, compilation.status_reason = False, "ok", None
        compilation.gluon = gluon
        compilation.stage = "ttgir" if gluon else compilation.stage
        return compilation

    def _starts_again(self, compilation: CompilationRecord | None, header: DumpHeader) -> bool:
        """Whether a module dump is the first of the kernel's next compilation: its pass ran before an
        Inliner that joined them (a fork's first pass) and never after one, and `compilation` is past
        its Inliner."""
        key = (header.when, header.pass_name)
        return (
            compilation is not None
            and not compilation.before_start
            and header.kind == "mlir"
            and header.is_module_scope
            and key in self._before_start
            and key not in self._after_start
        )

    @staticmethod
    def mark_failed(compilation: CompilationRecord | None, header: DumpHeader) -> None:
        """A pass of `compilation` failed. The reason is left to its error diagnostics (linking fills
        in "pass X failed" where none came)."""
        if compilation is not None:
            compilation.status = "failed"
            compilation.failed_pass = compilation.failed_pass or header.pass_name

    def mark_current_failed(self, header: DumpHeader) -> None:
        """The failed pass's dump could not be kept: the compilation in progress failed all the same."""
        self.mark_failed(self._current, header)

    def _open_generic(self, dump: Dump) -> CompilationRecord:
        header = dump.header
        compilation = CompilationRecord(None, dump.line, SnapshotList(self._tables), stage=GENERIC_MLIR_STAGE)
        compilation.generic = True
        compilation.first_dump = (header.kind, header.when, header.pass_name, scopes.level_and_name(header, dump.body)[0])
        self.compilations.append(compilation)
        return compilation

    def _record(
        self, compilation: CompilationRecord | None, dump: Dump, blob: str, level: str, name: str | None,
        trace: tuple[str, ...],
    ) -> SnapshotRecord:
        snapshots = compilation.snapshots if compilation else None
        index = len(snapshots) if snapshots else 0
        base, changed = None, True  # the first dump of a scope counts as a change: it brings the IR
        if compilation is not None:
            if level in (scopes.LOOP, scopes.REGION) and not scopes.function_of_loop(name) \
                    and compilation.last_function:
                name = f"{name or level} in {compilation.last_function}"
            elif level in (scopes.FUNCTION, scopes.MACHINE) and name:
                compilation.last_function = name
            key = scopes.scope_key(level, name)
            # A loop's header label changes when a pass renumbers or rotates it: then its function's
            # latest loop dump stands in.
            loops = f"loop in {compilation.last_function}" if level == scopes.LOOP else None
            previous = compilation.scope_last.get(key) or (compilation.scope_last.get(loops) if loops else None)
            if previous is not None:
                base, changed = previous[0], previous[1] != blob
            compilation.scope_last[key] = (index, blob)
            if loops:
                compilation.scope_last[loops] = (index, blob)
        stage = "llvm-ir" if dump.header.kind == "llvm" else (compilation.stage if compilation else "ttgir")
        return SnapshotRecord(
            index=index,
            header=dump.header,
            line=dump.line,
            blob=blob,
            size=len(dump.body),
            line_count=_line_count(dump),
            stage=stage,
            changed=changed,
            level=level,
            base=base,
            trace=trace,
            unit=name,
        )

    def _advance_stage(self, compilation: CompilationRecord, header: DumpHeader) -> None:
        """The dump shows the IR *before* its pass, so the stage moves on after the boundary pass."""
        if compilation.generic:
            return
        marks = self._stage_marks.get(id(header))
        if marks is None or marks[0] is not header:
            names = (header.pass_arg or "", header.pass_name)
            marks = (
                header,
                any(_TO_TTGIR.search(name) for name in names),
                any(_TO_LLVM.search(name) for name in names),
            )
            if len(self._stage_marks) > 4096:
                self._stage_marks.clear()
            self._stage_marks[id(header)] = marks
        if compilation.stage == "ttir" and marks[1]:
            compilation.stage = "ttgir"
        elif compilation.stage == "ttgir" and marks[2]:
            compilation.stage = "llvm-dialect"

    def mark_truncated(self, reason: str) -> None:
        if self._current is not None and self._current.status == "ok":
            self._current.status = "partial"
            self._current.status_reason = reason


def _line_count(dump: Dump) -> int:
    if dump.line_count is not None:
        return dump.line_count
    return dump.body.count(b"\n") + 1 if dump.body else 0


def _is_triton(body: bytes) -> bool:
    return _TRITON_DIALECT.search(body) is not None


def _restarts(compilation: CompilationRecord, dump: Dump, blob: str, level: str) -> bool:
    """Whether a module-level dump starts the next command line's compilation (see the module doc)."""
    header = dump.header
    first = compilation.first_dump == (header.kind, header.when, header.pass_name, level)
    if first and compilation.snapshots and compilation.snapshots[0].blob == blob:
        return True
    if header.kind == "llvm":
        if compilation.machine_code:
            return True
        module_id = _module_id(dump.body)
        if module_id is not None:
            if compilation.module_id is not None and module_id != compilation.module_id:
                return True
            compilation.module_id = module_id
        if compilation.defined is None:
            compilation.defined = frozenset(scopes.defined(dump.body))
        elif first:  # only the first pass's dumps are read for their functions
            defined = frozenset(scopes.defined(dump.body))
            if defined and compilation.defined.isdisjoint(defined):
                return True
    return False


def _module_id(body: bytes) -> bytes | None:
    if not body.startswith(b"; ModuleID = "):
        return None
    end = body.find(b"\n")
    return body[: len(body) if end < 0 else end]


def _name_generic(compilation: CompilationRecord, body: bytes) -> None:
    """A generic compilation's name and target, from the dumps that hold them: an LLVM module's
    source file (or ModuleID) and triple, an MLIR module's name, or else (until a module names
    it) the first function the IR defines."""
    if not compilation.named_by_module:
        match = _LLVM_MODULE_NAME.search(body) or _MLIR_MODULE_NAME.search(body)
        if match is not None and match.group(match.lastindex) == _MLIR_TRANSLATED:
            # every module MLIR translates to LLVM IR is so named: its kernel names it
            match = _LLVM_DEFINED.search(body) or match
        compilation.named_by_module = match is not None
        if match is None and compilation.kernel is None:
            match = _LLVM_DEFINED.search(body) or _MLIR_SYMBOL.search(body)
        if match is not None:
            name = next(group for group in match.groups() if group is not None)
            compilation.kernel = name.strip(b'"').decode("utf-8", "replace") or compilation.kernel
    if compilation.target is None:
        match = _TRIPLE.search(body)
        if match is not None:
            compilation.target = match.group(1).decode("utf-8", "replace")
