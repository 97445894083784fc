"""Real logs, their mutations and the properties the log parsers must keep on them.

Shared by tests/test_fuzz_logs.py (a fixed-seed run in CI) and bench/fuzz.py (a long random run).
The logs are real captures cut verbatim from ../shared/corpus into tests/fixtures (so the properties
run without the corpus); each property takes a short window of whole dumps to keep examples fast.
"""

from __future__ import annotations

import gzip
import io
import itertools
import re
from dataclasses import dataclass
from functools import cache

from hypothesis import strategies as st

from parsers.logs.compilations import CompilationGrouper
from parsers.logs.diagnostics import parse_gap
from parsers.logs.log import scan_log
from parsers.records import Dump, GapBlock, UnknownBanner
from tests.conftest import FIXTURES

LOG_FIXTURES = (
    "sm90_add_kernel_dump.log.gz",  # 3.9, new banner form, pipeliner-internal dumps
    "llvm_banners_sm90_triton39.log.gz",  # the three LLVM banner styles after the last MLIR dumps
    "old_header_sm90_triton31.log.gz",  # 3.1, old banner form, #triton_gpu
    "inductor_tail_warning_h200_triton36.log.gz",  # 3.6 on a GPU, a Python warning after the dumps
    "recompile_add_kernel_triton39.log.gz",  # two compilations, then a CompilationError traceback
)
# Written out again, not imported from parsers/logs/log.py: the tests' oracle must not share the
# scanner's bugs.
BANNER_START = re.compile(rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump )", re.MULTILINE)
# Bytes an IR printer never writes (it escapes them); the scanner rejects dumps holding them.
FOREIGN_BYTES = st.sampled_from([b"\x00", b"\xff", b"\xc3", b"\x80\x81", b"\xed\xa0\x80", b"\x00\x00\x00\x00"])


@cache
def fixture_log(name: str) -> bytes:
    return gzip.decompress((FIXTURES / name).read_bytes())


@cache
def banner_offsets(log: bytes) -> tuple[int, ...]:
    return tuple(match.start() for match in BANNER_START.finditer(log))


def scan(data: bytes, chunk_size: int = 1 << 20) -> list:
    return list(scan_log(io.BytesIO(data), chunk_size=chunk_size))


def dumps(records: list) -> list[Dump]:
    return [record for record in records if isinstance(record, Dump)]


def intact(records: list) -> list[Dump]:
    return [record for record in records if isinstance(record, Dump) and not record.damage]


def key(dump: Dump) -> tuple[str, bytes]:
    """A dump's banner and text, for comparing dumps. An LLVM dump's body also holds the lines
    LLVM's pass manager prints after the IR ("Running pass: X on [module]"), up to the next banner;
    they belong to no dump (a mix can move them without touching the IR), so the IR is compared."""
    body = dump.body
    if dump.header.kind == "llvm":
        lines = body.split(b"\n")
        while lines and (not lines[-1].strip() or lines[-1].startswith(PASS_MANAGER_LINES)):
            lines.pop()
        body = b"\n".join(lines)
    return dump.header.raw, body


PASS_MANAGER_LINES = (b"Running ", b"Invalidating ", b"Clearing ", b"Skipping ")


@dataclass(frozen=True)
class Window:
    """Whole dumps `first`..`last` of a fixture log, cut at banners: itself a valid log."""

    name: str
    first: int
    count: int

    @property
    def data(self) -> bytes:
        log = fixture_log(self.name)
        offsets = banner_offsets(log) + (len(log),)
        end = min(self.first + self.count, len(offsets) - 1)
        return log[offsets[self.first] : offsets[end]]


@st.composite
def windows(draw, max_dumps: int = 6) -> Window:
    name = draw(st.sampled_from(LOG_FIXTURES))
    total = len(banner_offsets(fixture_log(name)))
    first = draw(st.integers(0, total - 1))
    return Window(name, first, draw(st.integers(1, max_dumps)))


def check_scan(data: bytes, chunk_size: int) -> list:
    """Everything every input must satisfy: the scanner, the grouping and the gap parser never
    raise; records come in log order; every gap line is its input line verbatim; every dump's
    banner and body are bytes of the input."""
    records = scan(data, chunk_size)
    lines = data.split(b"\n")
    grouper = CompilationGrouper()
    last_line = 0
    for record in records:
        if isinstance(record, Dump):
            assert record.line >= last_line
            last_line = record.line
            assert record.body in data
            assert record.header.raw.encode("utf-8", "surrogateescape") in data or "\ufffd" in record.header.raw
            if not record.damage:
                grouper.add(record, str(len(record.body)))
        elif isinstance(record, GapBlock):
            for number, text in record.lines:
                assert number >= last_line
                last_line = number
                line = lines[number - 1].rstrip(b"\r").decode("utf-8", "replace")
                # Verbatim; or the rest of a line a banner started in the middle of (its head ended
                # the dump that line was in).
                assert text == line or (line.endswith(text) and text.startswith("// -----//"))
            parse_gap(record.lines)
        else:
            assert isinstance(record, UnknownBanner)
    assert sum(len(c.snapshots) for c in grouper.compilations) + len(grouper.orphans) == len(intact(records))
    return records


def interleave(parts_a: list[bytes], parts_b: list[bytes], runs: list[int]) -> tuple[bytes, bytearray]:
    """Alternate runs of pieces from a and b (run lengths from `runs`), then the rest of both.
    Returns the mix and, for each of its bytes, the log it came from (0: a, 1: b)."""
    out: list[bytes] = []
    owners: list[bytes] = []
    taken = [0, 0]
    sources = (parts_a, parts_b)

    def take(which: int, count: int) -> None:
        for piece in sources[which][taken[which] : taken[which] + count]:
            out.append(piece)
            owners.append(bytes([which]) * len(piece))
        taken[which] += count

    for turn, run in enumerate(runs):
        take(turn % 2, run)
    take(0, len(parts_a))
    take(1, len(parts_b))
    return b"".join(out), bytearray(b"".join(owners))


def kept_whole(mixed: bytes, data: bytes, start: int, end: int, llvm: bool) -> bool:
    """Whether the dump at data[start:end] (banner to next banner) sits whole in `mixed` where the
    scanner can know it whole: at a line start, not right after another MLIR banner (which of two
    dumps a body then belongs to is unknown), and for an LLVM dump, which ends only at the next
    banner, followed by a banner or the end."""
    text = data[start:end]
    at = mixed.find(text)
    while at >= 0:
        before = mixed.rfind(b"\n", 0, max(at - 1, 0)) + 1 if at else 0
        after = at + len(text)
        if (
            (at == 0 or mixed[at - 1] == 10)
            and not (at and mixed.startswith(b"// -----// ", before))
            and (not llvm or after == len(mixed) or BANNER_START.match(mixed, after))
        ):
            return True
        at = mixed.find(text, at + 1)
    return False


def single_source(mixed: bytes, owners: bytearray, dump: Dump) -> bool:
    """Whether all the bytes of `dump` (banner line and body) came from one of the mixed logs."""
    text = dump.header.raw.encode("utf-8", "surrogateescape") + b"\n"
    at = mixed.find(text + dump.body) if "\ufffd" not in dump.header.raw else -1
    if at < 0:
        return False
    span = owners[at : at + len(text) + len(dump.body)]
    return span.count(span[0]) == len(span)


def split_lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def split_chars(data: bytes, sizes: list[int]) -> list[bytes]:
    """Pieces of the sizes given (cycled), as a writer's partial writes."""
    pieces, at, k = [], 0, 0
    while at < len(data):
        size = sizes[k % len(sizes)] if sizes else len(data)
        pieces.append(data[at : at + size])
        at += size
        k += 1
    return pieces


def normalised(records: list) -> list[tuple]:
    """Records in a form independent of how the scanner batched gap lines or took its fast path."""
    out: list[tuple] = []
    for record in records:
        if isinstance(record, Dump):
            out.append(("dump", record.header.raw, record.body, record.line, record.damage, record.truncated))
        elif isinstance(record, GapBlock):
            out.extend(("gap", number, text) for number, text in record.lines)
        else:
            out.append(("unknown", record.line, record.text))
    return out


def dump_spans(log: bytes) -> list[tuple[int, int]]:
    """(start, end) of each dump of a valid log: its banner through the blank line after it."""
    offsets = banner_offsets(log) + (len(log),)
    return list(itertools.pairwise(offsets))


# Fragments that steer random edits towards the scanner's decisions.
INTERESTING = [
    b"\n", b"\n\n", b"\r\n", b"{", b"}", b"// -----// ", b"// -----//", b" //----- //", b"; *** IR Dump ",
    b"*** IR Dump ", b"# *** IR Dump ", b"// -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //\n",
    b"; *** IR Dump After InstCombinePass on [module] ***\n", b"===-", b"Traceback (most recent call last)\n",
    b"#loc = loc(unknown)\n", b"\x00", b"\xff",
]
TRIED = [0]  # inputs tried, for bench/fuzz.py


def count() -> None:
    TRIED[0] += 1
