"""Records the parsers produce. Plain dataclasses: no database, no web."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DumpHeader:
    """One dump banner, parsed. `kind` is how the counts in the corpus's expected.json split dumps."""

    kind: str  # "mlir" | "internal" | "llvm"
    when: str  # "before" | "after"
    pass_name: str
    pass_arg: str | None
    pass_options: str | None
    scope: str | None  # "builtin.module", "tt.func @name", "[module]", "add_kernel", ...
    failed: bool
    raw: str  # the banner line as logged, without its newline

    @property
    def is_module_scope(self) -> bool:
        return self.scope in (None, "builtin.module", "[module]")


@dataclass
class Dump:
    """One IR dump: its banner and body bytes (trailing blank lines removed)."""

    header: DumpHeader
    body: bytes
    line: int  # 1-based log line of the banner
    damage: str | None = None  # why it could not be kept intact, or None
    truncated: bool = False  # the log ended inside this dump
    line_count: int | None = None  # lines in body, when the scanner already counted them


@dataclass
class UnknownBanner:
    """A line that starts like a dump banner but does not parse: kept and reported."""

    line: int
    text: str


@dataclass
class GapBlock:
    """Consecutive log lines outside any dump, as (1-based line number, text) pairs."""

    lines: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class CutLine:
    """A line longer than the scanner holds: its first bytes were kept, `dropped` bytes were not."""

    line: int
    kept: int
    dropped: int
