"""Helion's generated Triton code: which Helion line each generated statement came from.

Helion turns a `@helion.kernel` into a Python module holding one `@triton.jit` function per kernel
(`_helion_<name>`) and a host function (`<name>`) that launches it, and writes it to a file
(PyCodeCache: `/tmp/torchinductor_<user>/xx/cxx....py`) that Triton compiles, so the IR's `loc()`
entries name lines of that file. Before each statement the code carries comments quoting the Helion
source it came from (helion/_compiler/ast_extension.py, 0.3 to 1.5):

    # src[matmul.py:26]: for tile_k in hl.tile(k):
    # src[matmul.py:27]:     acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
    for offset_2 in tl.range(0, 256, _BLOCK_SIZE_2):

One origin prints as a group of such comments: up to three quoted lines (the first dedented, so the
lines after it keep their indentation) and, for a longer one, a last `# src[matmul.py:24-28]: ...`
with the whole range. The file is named by its base name only. `# src[unknown]: [source unavailable]`
marks code of no known origin.

With HELION_PRINT_OUTPUT_CODE=1, Helion prints each module it loads to stderr, after a line naming
its file: `# Output code written to: /tmp/torchinductor_root/3w/c3w....py` (helion/runtime/kernel.py,
`compile_config`); the printed text is the file's, line for line. :class:`PrintedCode` finds these
blocks among a log's lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# Line numbers of at most 9 digits (a longer one is no line: Python refuses to convert 4300 digits).
_SRC = re.compile(
    r"^[ \t]*# src\[(?:(?P<file>[^\]\n]{0,1000}?):(?P<start>-?\d{1,9})(?:-(?P<end>\d{1,9}))?|unknown)\]: ?(?P<text>.*)$")
_SRC_BYTES = re.compile(rb"^[ \t]*# src\[[^\]\n]*\]: ", re.MULTILINE)
_DEF = re.compile(r"^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")
PRINTED_HEADER = "# Output code written to: "
# A line of a printed module at column 0: what Helion's modules hold there (imports, constants,
# decorators, functions, the repro caller's `if __name__ == ...`, comments).
_TOP_LEVEL = re.compile(r"(?:from\s|import\s|def\s|async\s+def\s|class\s|@|if\s|#|[A-Za-z_][\w.]*\s*(?::[^=]*)?=[^=])")
MAX_PRINTED_LINES = 100_000  # a printed module longer than this is cut (a runaway print)


@dataclass(frozen=True)
class Origin:
    """The Helion lines one generated statement came from (`file` is a base name; None: unknown)."""

    file: str | None
    start: int
    end: int

    def label(self) -> str:
        if self.file is None:
            return "unknown"
        return f"{self.file}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")


@dataclass
class Statement:
    line: int  # the generated line of its first code line (1-based)
    origin: Origin


@dataclass
class Kernel:
    """One function of the generated module: a `@triton.jit` kernel (`device`) or the host function."""

    name: str
    line: int
    device: bool
    statements: list[Statement] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return sorted({s.origin.file for s in self.statements if s.origin.file is not None})


@dataclass
class GeneratedCode:
    kernels: list[Kernel]
    origins: dict[int, Origin]  # every generated code line under a `# src[...]` group -> its origin
    quoted: dict[tuple[str, int], str]  # (file, Helion line) -> the quoted text, stripped

    @property
    def files(self) -> list[str]:
        return sorted({origin.file for origin in self.origins.values() if origin.file is not None})


def holds_origins(head: bytes) -> bool:
    """Whether text holds Helion's `# src[file:line]: ` comments (a generated module, or a log with one)."""
    return _SRC_BYTES.search(head) is not None


def is_generated_code(path: str, head: bytes) -> bool:
    """A generated module saved as a file: Python with `# src[...]` comments and a Triton kernel in its
    first bytes. A program's output that holds one (after `# Output code written to:`) is a log."""
    if PRINTED_HEADER.encode() in head or b"// -----// IR Dump" in head:
        return False
    if not (path.endswith(".py") or head.lstrip().startswith((b"from __future__", b"import "))):
        return False
    return holds_origins(head) and (b"@triton.jit" in head or b"def _helion_" in head)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def parse(text: str) -> GeneratedCode:
    """The kernels of a generated module and the origin of each of its code lines."""
    kernels: list[Kernel] = []
    origins: dict[int, Origin] = {}
    quoted: dict[tuple[str, int], str] = {}
    kernel: Kernel | None = None
    decorated = False
    group: list[int] | None = None  # [start, last quoted line, end] of the comments being read
    group_file: str | None = None
    current: Origin | None = None  # the origin of the code lines since the last group
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        match = _SRC.match(line)
        if match is not None:
            file, start_text, end_text, quote = match.group("file", "start", "end", "text")
            start = int(start_text) if start_text is not None else 0
            end = int(end_text) if end_text is not None else start
            if file is not None and start > 0 and not quote.startswith("..."):
                quoted.setdefault((file, start), quote.strip())
            continues = group is not None and file == group_file and (
                (end_text is not None and start == group[0])
                or (group[1] < start <= group[0] + 2 and quote[:1] in (" ", "\t")))
            if continues:
                assert group is not None
                group[1], group[2] = max(group[1], start), max(group[2], end)
            else:
                group, group_file = [start, start, end], file
            current = None
            continue
        if not stripped:
            continue
        if _indent(line) == 0 and not stripped.startswith("#"):
            group = current = kernel = None
            if stripped.startswith("@"):  # `@triton.jit` (or another decorator) before a function
                decorated = decorated or "jit" in stripped
                continue
            definition = _DEF.match(stripped)
            if definition is not None:
                kernel = Kernel(definition.group(1), number, decorated)
                kernels.append(kernel)
            decorated = False
            continue
        if stripped.startswith("#"):
            continue
        if group is not None:
            current = Origin(group_file, group[0], group[2]) if group_file is not None else Origin(None, 0, 0)
            if kernel is not None:
                kernel.statements.append(Statement(number, current))
            group = None
        if current is not None and kernel is not None:
            origins[number] = current
    return GeneratedCode([k for k in kernels if k.statements], origins, quoted)


def helion_note(text: str) -> str:
    """What an upload's file list says of a generated module: its kernels and the files they came from."""
    code = parse(text)
    device = [kernel.name for kernel in code.kernels if kernel.device]
    return (f"Helion's generated Triton code: {', '.join(device) or 'no @triton.jit kernel'}"
            + (f" (from {', '.join(code.files)})" if code.files else ""))


def matches_source(code: GeneratedCode, file: str, source_text: str) -> int:
    """How many of the Helion lines `code` quotes from `file` read the same in `source_text` (0: it is
    not the file the code came from, or the file changed since)."""
    lines = source_text.split("\n")
    return sum(1 for (name, number), quote in code.quoted.items()
               if name == file and 0 < number <= len(lines) and lines[number - 1].strip() == quote)


@dataclass
class PrintedBlock:
    path: str  # the file Helion wrote it to, as printed
    line: int  # the log line of the header
    text: str


class PrintedCode:
    """The modules HELION_PRINT_OUTPUT_CODE=1 printed, found among a log's lines: each header line
    `# Output code written to: PATH` and the code after it, up to the first line that is not code at
    column 0 of a module, a gap in the line numbers, or :meth:`finish` (the reader calls it at each
    dump: a dump's banner follows the code as soon as Triton compiles the kernel)."""

    def __init__(self) -> None:
        self.blocks: list[PrintedBlock] = []
        self._path: str | None = None
        self._line = 0
        self._next = 0  # the line number that continues the module being read
        self._lines: list[str] = []

    @property
    def reading(self) -> bool:
        """Whether a module is being read (the next lines may continue it)."""
        return self._path is not None

    def feed(self, lines: Iterable[tuple[int, str]]) -> None:
        """Consecutive log lines (number, text without its newline), in log order."""
        for number, line in lines:
            if self._path is not None and number != self._next:
                self.finish()
            if line.startswith(PRINTED_HEADER):
                self.finish()
                self._path, self._line, self._next = line[len(PRINTED_HEADER):].strip(), number, number + 1
                continue
            if self._path is None:
                continue
            if (line and not line[0].isspace() and not _TOP_LEVEL.match(line)) or len(self._lines) >= MAX_PRINTED_LINES:
                self.finish()
                continue
            self._lines.append(line)
            self._next = number + 1

    def finish(self) -> None:
        if self._path is not None:
            while self._lines and not self._lines[-1].strip():
                self._lines.pop()
            if self._path and self._lines:
                self.blocks.append(PrintedBlock(self._path, self._line, "\n".join(self._lines) + "\n"))
        self._path, self._lines = None, []
