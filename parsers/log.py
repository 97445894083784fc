"""Split a log byte stream into IR dumps and the gap text between them.

Works on large chunks and byte offsets rather than decoded lines: a dump body is found with
`bytes.find` and sliced out whole, so the Python-level work is per dump, not per line.
Damage is detected where it is cheap: a banner that starts mid-line or is glued to another (two
writers interleaved), a dump cut off by the next banner or by the end of the log, and a body that
its printer cannot have written whole (body_damage: foreign bytes, unbalanced braces, no module or
two, #loc or !N numbering with gaps, an LLVM dump not ending as one does). Pieces of broken banners
in the gap text are reported. tests/test_fuzz_logs.py states, as properties, what this guarantees.

Speed (see bench/NOTES.md): the common case is an MLIR dump followed by a blank line and the next
banner. The fast path finds the next banner mark once, takes the body in front of it, and looks at
the body's bytes again only when they are new: a body equal to a recent one (most passes change
nothing) is recognised with one `startswith` comparison in place, and the recent body object, its
line count and its brace check are reused. Every other layout (gap text after a dump, a banner cut
into a line, a dump running over a chunk's end) takes the general path, which gives the same records.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import BinaryIO

from parsers import llvm_dump, mlir_dump, scopes
from parsers.records import CutLine, Dump, DumpHeader, GapBlock, UnknownBanner

CHUNK_SIZE = 8 << 20
GAP_BATCH_LINES = 5000
_MARK = b"// -----//"  # any MLIR banner, wherever it appears
_GLUED = re.compile(rb"// -----// |(?:; |# )?\*\*\* IR Dump ")  # where a banner glued onto another starts
_HEADS = (b"// -----// ", b"; *** IR Dump ", b"*** IR Dump ", b"# *** IR Dump ")
_LLVM_BANNER_TEXT = b"*** IR Dump "
_MLIR_BANNER = b"// -----// "  # an MLIR banner, as _BANNER matches it at a line's start
_BANNER = re.compile(rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump )", re.MULTILINE)
# An LLVM dump has blank lines inside, so it runs until the next banner or an obvious non-IR line
# (a timing report, a traceback, LLVM's fatal error, or MLIR text: another writer's dump).
# LLVM's pass-manager trace (-debug-pass-manager, which Triton's LLVM_IR_ENABLE_DUMP turns on) ends a
# dump too: its lines come between dumps and are log text, never IR (parsers/pm_trace.py reads them).
_LLVM_END = re.compile(
    rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump |===-|Traceback \(most recent call last\)"
    rb"|#loc\d* = loc\(|module (?:attributes )?\{|LLVM ERROR: "
    rb"|Running (?:pass|analysis): |Invalidating (?:analysis: |all non-preserved analyses)"
    rb"|Clearing all analysis results for: |Skipping pass"
    # An MLIR diagnostic ("/path/k.py:47:31: error: ...", "<unknown>:0: error: ...") or a Python
    # warning: the next compile's output; no IR line starts with "/" or "<".
    rb"|(?:/[^\n]*?:\d+:\d+|<unknown>:0): (?:error|warning|note|remark): "
    rb"|/[^\n]*?\.py:\d+: \w*(?:Warning|Error): )",  # a Python warning ("/x/semantic.py:1640: UserWarning: ")
    re.MULTILINE,
)
# A machine-code (MIR) dump holds one function and ends with this line: what follows is log text,
# even when no banner comes next (the compile's last dump, then the next compile's errors).
_MIR_END = re.compile(rb"^# End machine code for function [^\n]*\n", re.MULTILINE)
UNBALANCED = "unbalanced braces: the dump is incomplete or mixed with other output"
FOREIGN = (
    "holds bytes an IR printer never writes (NUL, control or non-ASCII bytes): "
    "binary data or other output is mixed into the dump"
)
NO_MODULE = "no module in the dump: it is incomplete or mixed with other output"
LOC_GAP = "#loc aliases are missing: the dump was cut short or mixed with other output"
BAD_START = "the dump does not start with #aliases or its module: other output is mixed in"
BAD_END = "the dump does not end with its module's closing brace or #loc aliases: it is incomplete"
METADATA_GAP = "its !N metadata is incomplete or not last: the LLVM dump was cut short or mixed with other output"
MIR_END = "no '# End machine code' line: the machine-code dump was cut short"
LLVM_MIXED = "two LLVM dumps run together: a banner between them is missing or broken"
_METADATA_REF = re.compile(rb"![0-9]")
_LLVM_DEFINE = re.compile(rb"\ndefine [^@\n]*@([^(\s]+)\(")
LLVM_END = "the LLVM dump does not end with a function's closing brace or metadata: it was cut short"
# Lines LLVM's pass manager prints after a dump (LLVM_IR_ENABLE_DUMP with debug-pass-manager output).
_PASS_MANAGER_LINES = (b"Running ", b"Invalidating ", b"Clearing ", b"Skipping ")
EMPTY = "empty dump"
BROKEN_BANNER = "part of a dump banner inside the dump: other output is mixed in, or the next banner is broken"
MODULES = "more than one module in the dump: two dumps are mixed"
AMBIGUOUS = "its banner follows another banner directly: which of the two dumps this body belongs to is unknown"
# Pieces of a banner that other output broke: wherever a banner is split, one side keeps "IR Dump",
# or the split is inside it and the head ends in "*** I".."*** IR Dum" (an MLIR banner's head is
# already one by its "// -----// ") and the tail starts with "R Dump".."p" and "Before"/"After".
_BANNER_PIECE = re.compile(
    rb"IR Dump|\*\*\* I(?:R ?(?:D(?:um?)?)?)?\r?$|^(?:R Dump|\s?Dump|ump|mp|p) (?:Before|After)\b", re.MULTILINE
)
_NL = 10  # b"\n"[0]
_CR = 13
_BLANK_END = re.compile(rb"\n\r?\n")  # a body's end: its last newline, then a blank line (CRLF logs too)
# bytes.translate deleting all but these leaves a short string to count them in: one pass, not three.
# Printers escape every byte outside printable ASCII (MLIR and LLVM alike; no corpus dump holds
# one), so the bytes kept besides "\n{}" are foreign: their count comes from the same pass.
_PRINTABLE = b"\t\r" + bytes(range(0x20, 0x7F))
# Also kept: the rare letters every banner piece holds ("*** I", "IR Dump", "p Before", "p After"),
# so the full-text searches for pieces run only on bodies that hold one of them.
_PIECE_LETTERS = b"*DBA"
_COUNTED = bytes(c for c in _PRINTABLE if c not in b"{}" + _PIECE_LETTERS)
# An MLIR printer numbers #loc aliases #loc, #loc1, #loc2, ... by first use and defines each one used,
# before the module or after it: a gap in the numbers means lines were lost (every corpus dump holds).
# The module is in custom form ("module attributes {") or, when a failed pass left IR that does not
# verify, in generic form ('"builtin.module"() ({', Triton 3.8's "IR Dump After X Failed").
_MODULE_OR_LOC = re.compile(rb'\n(?:((?:"builtin\.)?m)odule|#loc(\d*) = )')
_METADATA_DEF = re.compile(rb"\n!(\d+) = ")  # LLVM numbers its metadata !0, !1, ... likewise
# A dump still open at a chunk's end is scanned again joined with the next chunk's head (so the fast
# path sees it whole), unless it is already this long.
_CARRY_MAX = 4 << 20
# Memory stays bounded by these however the input is shaped: a longer line keeps its first
# MAX_LINE_BYTES (the rest is reported, not stored), and a longer dump ends there as damaged (the
# rest is read as log text). Real dumps are a few MB; a runaway print or binary junk is not IR.
MAX_LINE_BYTES = 8 << 20
MAX_DUMP_BYTES = 64 << 20
TOO_BIG = f"the dump is larger than {MAX_DUMP_BYTES >> 20} MiB: cut there, the rest is read as log text"

# Recently seen fast-path bodies, for recognising an unchanged pass without re-reading its body.
_RECENT_BYTES = 8 << 20
_RECENT_COUNT = 64
_HEADER_CACHE = 8192


def body_damage(body: bytes, kind: str, counted: bytes | None = None, empty_ok: bool = False) -> str | None:
    """Why `body` (trailing newlines removed) cannot be a whole dump as its printer wrote it, or None.

    `counted` is `body.translate(None, _COUNTED)` when the caller has it; `empty_ok` for an LLVM dump
    whose banner says it is empty ("omitted because no change"). The checks are the ones a
    cut or a mix breaks and a real dump never does (all hold on every corpus dump): printable ASCII
    only, balanced braces, a module, an MLIR dump's last line, the numbering of #loc aliases and of
    LLVM metadata. They cannot see a foreign line that keeps all of these (a brace-free line from
    another writer's dump at the same depth): tests/test_fuzz_logs.py says what is guaranteed.
    """
    if counted is None:
        counted = body.translate(None, _COUNTED)
    opening, closing = counted.count(b"{"), counted.count(b"}")
    letters = sum(counted.count(letter) for letter in _PIECE_LETTERS)
    if len(counted) != opening + closing + counted.count(b"\n") + letters:
        return FOREIGN
    if not body.strip():
        return None if empty_ok and kind == "llvm" else EMPTY
    if opening != closing:
        return UNBALANCED
    text = b"\n" + body
    if _has_banner_piece(body, counted):
        return BROKEN_BANNER
    if kind == "llvm":
        # One module, or one function, per dump: a second one is another dump's text run into it.
        machine = body.count(b"# Machine code for function")
        if (
            text.find(b"\n; ModuleID", 1) >= 0 or machine > 1 or body.count(b"# End machine code") > 1
            or (machine and not body.startswith(b"# Machine code"))
        ):
            return LLVM_MIXED
        defined = _LLVM_DEFINE.findall(text)
        if len(set(defined)) != len(defined):
            return LLVM_MIXED
        last = _last_ir_line(body)
        if scopes.is_null_function(body):  # a legacy CGSCC pass on the call graph's external node
            return None
        if scopes.is_loop_body(body) or scopes.is_region_body(body):  # a loop's or region's blocks only
            return scopes.loop_damage(body, _last_line(body))
        if b"# Machine code for function" in body:
            if not last.startswith(b"# End machine code for function"):
                return MIR_END
        elif not last.startswith((b"}", b"!", b"attributes #", b"declare ")):
            return LLVM_END
        numbers = _METADATA_DEF.findall(text)  # only a module dump defines metadata, and last
        if numbers and (not _numbered(numbers) or b"!%d" % len(numbers) in body or not last.startswith(b"!")):
            return METADATA_GAP
        module = body.startswith((b"; ModuleID", b"source_filename"))
        if not numbers and module and _METADATA_REF.search(body):
            return METADATA_GAP  # a module using metadata it does not define: cut before them
        if numbers and not module:
            return LLVM_MIXED  # a function dump defines no metadata: a module's tail ran into it
        return None
    if scopes.is_mlir_op_body(body):  # a pass's op printed alone (no module scope): IREE, mlir-opt
        return scopes.mlir_op_damage(body) or _loc_damage(body, text)
    if not body.startswith((b"#", b"module", b'"builtin.module"')):
        return BAD_START  # an MLIR module dump opens with its aliases or the module itself
    found = _MODULE_OR_LOC.findall(text)  # one pass for both: (b"m", b"") or (b"", alias number)
    modules = sum(1 for module, _ in found if module)
    if modules != 1:
        return NO_MODULE if not modules else MODULES
    if body[body.rfind(b"\n") + 1 : body.rfind(b"\n") + 2] not in (b"}", b"#"):
        return BAD_END
    numbers = [number for module, number in found if not module]
    if not _numbered(numbers) or (_loc_at_least(len(numbers)).search(body) if numbers else b"#loc" in body):
        return LOC_GAP  # a number missing, or one used beyond the last defined (by any line, alias or op)
    return None


def _loc_damage(body: bytes, text: bytes) -> str | None:
    """The #loc numbering check of an MLIR dump, for one that holds no module."""
    numbers = [number for module, number in _MODULE_OR_LOC.findall(text) if not module]
    if not _numbered(numbers) or (_loc_at_least(len(numbers)).search(body) if numbers else b"#loc" in body):
        return LOC_GAP
    return None


def _last_line(body: bytes) -> bytes:
    """The last non-blank line of a body, as printed (leading blanks kept)."""
    body = body.rstrip()
    return body[body.rfind(b"\n") + 1 :]


def _has_banner_piece(data: bytes, counted: bytes | None = None) -> bool:
    # Literal finds run at memory speed, the regex (anchored at line ends) only on a hit; with
    # `counted`, a find runs only if its rare letter is in the text at all.
    if counted is None:
        counted = _PIECE_LETTERS
    return (
        (b"D" in counted and b"IR Dump" in data)
        or (b"*" in counted and b"*** I" in data)
        or (b"B" in counted and b"p Before" in data)
        or (b"A" in counted and b"p After" in data)
    ) and _BANNER_PIECE.search(data) is not None


def _last_ir_line(body: bytes) -> bytes:
    """The last line of an LLVM dump that is not blank and not LLVM's pass-manager chatter."""
    end = len(body)
    while end > 0:
        start = body.rfind(b"\n", 0, end) + 1
        line = body[start:end].strip()
        if line and not line.startswith(_PASS_MANAGER_LINES):
            return line
        end = start - 1
    return b""


@functools.lru_cache(maxsize=256)
def _loc_at_least(count: int) -> re.Pattern[bytes]:
    """A pattern for a reference to #locN with N >= count (count >= 1): one search of the body, where
    collecting every #loc number would cost twice as much."""
    digits = str(count)
    larger = [
        digits[:i] + f"[{int(digit) + 1}-9]" + r"\d" * (len(digits) - i - 1)
        for i, digit in enumerate(digits)
        if digit != "9"
    ]
    alternatives = [digits, *larger, r"[1-9]\d{" + str(len(digits)) + ",}"]
    return re.compile(rb"#loc(?:" + "|".join(alternatives).encode() + rb")(?!\d)")


def _numbered(numbers: list[bytes]) -> bool:
    """Whether alias numbers are 0 (written as nothing), 1, 2, ... each once."""
    values = sorted(int(number) if number else 0 for number in numbers)
    return values == list(range(len(values)))


class _Chunks:
    """Read a stream in big blocks and hand out (buffer, start, end) pieces, buffer[start:end] being
    whole lines (the stream's last piece may lack its newline). Blocks are scanned where they were
    read, without copying. Bytes that must be seen together with what follows are joined with the
    next block's head into a small piece of their own: a line cut by a block's end, and (when the
    scanner sets `carry`) the start of a dump still open at a piece's end, which is joined up to the
    end of the next banner line."""

    def __init__(self, stream: BinaryIO, chunk_size: int) -> None:
        self.stream = stream
        self.chunk_size = chunk_size
        self.carry = b""  # set by the scanner: the unscanned tail of the piece it was given
        # For the next piece: (newlines before its cut line, bytes of it kept, bytes dropped).
        self.cut: tuple[int, int, int] | None = None
        self._dropped = 0

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        partial: list[bytes] = []  # unscanned bytes before block[start:] that end in no newline
        block, start = b"", 0  # block[start:] is not scanned yet
        while True:
            if start >= len(block):
                block, start = self.stream.read(self.chunk_size), 0
                if not block:
                    last = self._joined(self.carry, partial, b"")
                    if last:
                        yield last, 0, len(last)
                    return
            carry, self.carry = self.carry, b""
            if carry or partial:
                cut = 0
                if carry:
                    mark = block.find(_MARK, start)
                    if mark >= 0:
                        cut = block.find(b"\n", mark) + 1
                if not cut:
                    cut = block.find(b"\n", start) + 1
                if not cut:  # no newline in the rest of the block: keep collecting, up to a limit
                    room = MAX_LINE_BYTES - sum(map(len, partial))
                    if room > 0:
                        partial.append(block[start : start + room])
                    self._dropped += max(0, len(block) - start - max(room, 0))
                    start = len(block)
                    self.carry = carry
                    continue
                joined = self._joined(carry, partial, block[start:cut])
                partial, start = [], cut
                yield joined, 0, len(joined)
                continue
            cut = block.rfind(b"\n", start) + 1
            if cut > start:
                yield block, start, cut
            else:
                cut = start
            if cut < len(block):
                partial.append(block[cut:])
            start = len(block)

    def _capped(self, line: bytes) -> bytes:
        """The first MAX_LINE_BYTES of a line without its newline yet; the rest is counted, not kept."""
        if len(line) <= MAX_LINE_BYTES:
            return line
        self._dropped += len(line) - MAX_LINE_BYTES
        return line[:MAX_LINE_BYTES]

    def _joined(self, carry: bytes, partial: list[bytes], rest: bytes) -> bytes:
        """carry + the line cut by the block's end + its rest; a line over the limit is cut there, and
        `cut` tells the scanner which line of the piece it was and how much of it was dropped."""
        end = rest.find(b"\n") + 1 or len(rest)  # `rest` may run on past the line, to a banner
        line = b"".join(partial) + rest[:end]
        if self._dropped or len(line) > MAX_LINE_BYTES + 1:
            newline = line.endswith(b"\n")
            kept = self._capped(line[:-1] if newline else line)
            self.cut = (carry.count(b"\n"), len(kept), self._dropped)
            self._dropped = 0
            line = kept + (b"\n" if newline else b"")
        return carry + line + rest[end:]


class _HeaderCache(dict):
    """Banner bytes -> parsed header. Logs repeat a few hundred banners many times over."""

    def parse(self, line: bytes) -> DumpHeader | None:
        try:
            return self[line]
        except KeyError:
            pass
        if len(self) >= _HEADER_CACHE:
            self.clear()
        header = self[line] = _parse_banner(line)
        return header


def _parse_banner(line: bytes) -> DumpHeader | None:
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    if line.startswith(mlir_dump.PREFIX):
        return mlir_dump.parse_header(text)
    return llvm_dump.parse_header(text)


class _RecentBodies:
    """The last few fast-path bodies by length: (body, newline count, body_damage)."""

    def __init__(self) -> None:
        self.by_length: dict[int, list[tuple[bytes, int, str | None]]] = {}
        self.order: list[int] = []  # lengths, oldest first (one entry per body)
        self.size = 0
        self.last: tuple[bytes, int, str | None] | None = None  # the latest body seen

    def find(self, chunk: bytes, pos: int, length: int) -> tuple[bytes, int, str | None] | None:
        entries = self.by_length.get(length)
        if entries:
            for entry in reversed(entries):
                if chunk.startswith(entry[0], pos):
                    return entry
        return None

    def add(self, body: bytes, newlines: int, damage: str | None) -> None:
        length = len(body)
        self.last = (body, newlines, damage)
        if length > _RECENT_BYTES // 4:
            return
        self.by_length.setdefault(length, []).append((body, newlines, damage))
        self.order.append(length)
        self.size += length
        while self.size > _RECENT_BYTES or len(self.order) > _RECENT_COUNT:
            oldest = self.order.pop(0)
            entries = self.by_length[oldest]
            entries.pop(0)
            if not entries:
                del self.by_length[oldest]
            self.size -= oldest


class _Scanner:
    def __init__(self) -> None:
        self.line = 1  # line number at the scan position
        self.header: DumpHeader | None = None
        self.header_line = 0
        self.parts: list[bytes] = []
        self.gap = GapBlock()
        self.pending_damage: str | None = None
        self.headers = _HeaderCache()
        self.recent = _RecentBodies()
        self.carried = False  # the open dump's start was already carried into a joined piece
        self.ambiguous = False  # the last MLIR banner was followed by another banner at once
        self.cut_line = 0  # the last line _Chunks cut short: a dump holding it is damaged
        # The log's LLVM banners start "; ***" (LLVM 16 and later), or it holds MLIR banners, or
        # other output is mixed in: a "*** X on Y ***" banner is then one whose "; " was lost.
        self.semicolon_banners = False

    def cut_damage(self, last_line: int) -> str | None:
        if self.header_line < self.cut_line <= last_line:
            return f"line {self.cut_line} of the log is longer than {MAX_LINE_BYTES >> 20} MiB: cut there"
        return None

    # -- dumps -------------------------------------------------------------
    def start(self, header: DumpHeader, line: int, damage: str | None = None) -> None:
        self.header, self.header_line, self.parts = header, line, []
        self.pending_damage = damage
        self.carried = False

    def finish(self, damage: str | None = None, truncated: bool = False) -> Dump:
        assert self.header is not None
        body = b"".join(self.parts).rstrip(b"\r\n")
        empty_ok = "omitted" in (self.header.pass_options or "")
        damage = damage or self.pending_damage or self.cut_damage(self.line) or body_damage(
            body, self.header.kind, empty_ok=empty_ok
        )
        dump = Dump(self.header, body, self.header_line, damage, truncated)
        self.header, self.parts, self.pending_damage = None, [], None
        return dump

    def oversized(self) -> bool:
        return sum(map(len, self.parts)) > MAX_DUMP_BYTES

    # -- gap text ------------------------------------------------------------
    def add_gap(self, data: bytes, pieces: bool = True) -> Iterator[GapBlock | UnknownBanner]:
        if not data:
            return
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        # Text of a banner that other output broke (split over lines, cut short) is reported as an
        # unknown banner, so the user learns a dump was not read; its lines stay log text.
        pieces = pieces and _has_banner_piece(data)
        for raw in lines:
            text = raw.rstrip(b"\r").decode("utf-8", "replace")
            if pieces and _BANNER_PIECE.search(raw):
                if self.gap.lines:
                    yield self.flush_gap()
                yield UnknownBanner(self.line, text)
            self.gap.lines.append((self.line, text))
            self.line += 1
            if len(self.gap.lines) >= GAP_BATCH_LINES:
                yield self.flush_gap()

    def flush_gap(self) -> GapBlock:
        block, self.gap = self.gap, GapBlock()
        return block


def scan_log(stream: BinaryIO, chunk_size: int = CHUNK_SIZE) -> Iterator[Dump | GapBlock | UnknownBanner]:
    """Yield dumps, gap-text blocks and unparseable banners in log order."""
    scan = _Scanner()
    for record in _scan_log(scan, stream, chunk_size):
        kind = type(record)
        if kind is UnknownBanner or (kind is Dump and record.damage):
            scan.semicolon_banners = True  # mixed output: a "*** ... on X ***" banner may have lost "; "
        yield record


def _scan_log(scan: _Scanner, stream: BinaryIO, chunk_size: int) -> Iterator[Dump | GapBlock | UnknownBanner]:
    chunks = _Chunks(stream, chunk_size)
    for chunk, pos, size in chunks:
        if chunks.cut is not None:
            before, kept, dropped = chunks.cut
            chunks.cut = None
            scan.cut_line = scan.line + before
            yield CutLine(scan.cut_line, kept, dropped)
        # A dump that ended exactly at the previous chunk's end (or whose banner did: an empty dump):
        # its blank line starts this chunk.
        if scan.header is not None and scan.header.kind != "llvm":
            blank = 1 if chunk.startswith(b"\n", pos) else 2 if chunk.startswith(b"\r\n", pos) else 0
            if blank:
                yield scan.finish()
                scan.line += 1
                pos += blank
        while pos < size:
            if scan.header is None:
                if chunk.startswith(_MLIR_BANNER, pos):  # the usual: a banner right after a dump
                    pos = yield from _open_dump(scan, chunk, pos, size)
                    continue
                match = _BANNER.search(chunk, pos, size)
                end = match.start() if match else size
                if end > pos:
                    yield from scan.add_gap(chunk[pos:end])
                if match is None:
                    break
                pos = yield from _open_dump(scan, chunk, end, size)
            elif scan.header.kind == "llvm":
                match = _LLVM_END.search(chunk, pos, size)
                end = match.start() if match else size
                mir_end = _MIR_END.search(chunk, pos, end)
                if mir_end is not None:
                    match, end = mir_end, mir_end.end()
                scan.parts.append(chunk[pos:end])
                scan.line += chunk.count(b"\n", pos, end)
                pos = end
                if match is not None:
                    yield scan.finish()
                elif scan.oversized():
                    yield scan.finish(TOO_BIG)
            else:
                if not scan.parts:
                    dump = _fast_mlir(scan, chunk, pos, size)
                    if dump is not None:
                        pos = dump[1]
                        yield dump[0]
                        continue
                    if not scan.carried and size - pos <= _CARRY_MAX and chunk.find(_MARK, pos, size) < 0:
                        # The dump runs past this piece: scan it again joined with what follows.
                        scan.carried = True
                        chunks.carry = chunk[pos:size]
                        break
                pos = yield from _continue_mlir(scan, chunk, pos, size)
    if scan.header is not None:
        # Complete only if whole by body_damage and its last line has its newline: a writer ends
        # every line, so a log ending mid-line was cut there.
        body = b"".join(scan.parts)
        tail = body[body.rfind(b"\n") + 1 :]
        if scan.header.kind == "llvm" and len(tail) >= 3 and any(head.startswith(tail) for head in _HEADS):
            # The log was cut inside the next banner: the LLVM dump (which only a banner ends)
            # ended before it; the piece is reported as a banner.
            scan.parts = [body[: len(body) - len(tail)]]
            body = scan.parts[0]
        else:
            tail = b""
        complete = body.endswith(b"\n") and body_damage(body.rstrip(b"\r\n"), scan.header.kind) is None
        yield scan.finish(None if complete else "the log ends inside this dump", truncated=not complete)
        if tail:
            yield UnknownBanner(scan.line, tail.decode("utf-8", "replace"))
            yield from scan.add_gap(tail, pieces=False)
    if scan.gap.lines:
        yield scan.flush_gap()


def _open_dump(scan: _Scanner, chunk: bytes, start: int, size: int, damage: str | None = None):
    """Parse the banner at `start`; return the position after its line."""
    ambiguous, scan.ambiguous = scan.ambiguous, False  # it concerns this banner only
    eol = chunk.find(b"\n", start, size)
    eol = size if eol < 0 else eol + 1
    banner = chunk[start:eol]
    # A second banner glued onto this one: two writers interleaved on one line.
    glued = banner.find(_MARK, len(_MARK))
    second = _GLUED.search(banner, banner.find(b"IR Dump ") + 8)
    if second is not None and (glued < 0 or second.start() < glued):
        glued = second.start()
    if glued > 0:
        damage = "banner interleaved with another dump's banner"
    elif banner.rstrip(b"\r\n").translate(None, _PRINTABLE):
        damage = "the banner holds bytes an IR printer never writes: binary data or other output is mixed in"
    body_start = llvm_dump.glued_body_start(banner) if glued <= 0 else 0
    if body_start:
        banner = banner[:body_start]  # the rest of the line is the body's first line
    header = scan.headers.parse(banner if glued <= 0 else banner[:glued])
    if scan.gap.lines:
        yield scan.flush_gap()
    if header is None:
        yield UnknownBanner(scan.line, banner.rstrip(b"\r\n").decode("utf-8", "replace"))
        yield from scan.add_gap(banner, pieces=False)
        return eol
    if ambiguous:
        damage = damage or AMBIGUOUS
    if banner.startswith((b"; *** ", _MARK)):
        scan.semicolon_banners = True
    if banner.startswith(b"*** ") and (
        (header.pass_arg is None and scan.semicolon_banners) or banner.rstrip().endswith(b":")
    ):
        # LLVM 15 and older print new-PM banners without "; ". In a log of "; ***" banners (LLVM 16
        # on) or of MLIR ones (Triton, whose LLVM is newer), a banner without its pass argument is
        # the tail of a "; *** ... on X ***" banner whose head other output took; a "# *** ...:"
        # banner ends in ":".
        damage = damage or "the banner's head is missing: other output is mixed into it"
    scan.start(header, scan.line, damage)
    if body_start:
        return start + body_start  # the line is counted with the body
    scan.line += 1
    return eol


def _fast_mlir(scan: _Scanner, chunk: bytes, pos: int, size: int) -> tuple[Dump, int] | None:
    """The common case: the body, a blank line (or several), the next banner, all in this chunk.

    Returns the dump and the position after its blank line (further blank lines are gap text, as on
    the general path), or None for the general path. The body must not start with a newline, end with
    a CR, or hold a blank line or a banner mark: exactly when the general path would end the dump at
    the same place.
    """
    # An unchanged pass: the body equals the last one (already checked), followed by the separator.
    last = scan.recent.last
    if last is not None and chunk.startswith(last[0], pos):
        end = pos + len(last[0])
        mark = end
        while mark < size and chunk[mark] == _NL:
            mark += 1
        if mark - end >= 2 and chunk.startswith(_MARK, mark) and mark < size and last[2] != BROKEN_BANNER:
            return _emit(scan, last, end, mark)
    mark = chunk.find(_MARK, pos, size)
    if mark < 0:
        return None
    end = mark  # the body's end: chunk[end:mark] is two or more newlines
    while end > pos and chunk[end - 1] == _NL:
        end -= 1
    if mark - end < 2 or end <= pos:
        return None
    recent = scan.recent.find(chunk, pos, end - pos)
    if recent is None:
        body = chunk[pos:end]
        if body[0] == _NL or body[-1] == _CR or _BLANK_END.search(body):
            return None  # a blank line inside (a CRLF one too) ends the dump there: the general path
        counted = body.translate(None, _COUNTED)
        recent = (body, counted.count(b"\n"), body_damage(body, "mlir", counted))
        scan.recent.add(*recent)
    else:
        scan.recent.last = recent
    if recent[2] == BROKEN_BANNER:
        return None  # perhaps an LLVM banner inside: the general path ends the dump there
    return _emit(scan, recent, end, mark)


def _emit(scan: _Scanner, body_facts: tuple[bytes, int, str | None], end: int, mark: int) -> tuple[Dump, int]:
    """The dump whose body ends at `end`, the next banner being at `mark`; any blank lines beyond the
    one that ends the dump are gap lines (as add_gap would record them)."""
    body, newlines, body_problem = body_facts
    header = scan.header
    assert header is not None
    damage = scan.pending_damage or scan.cut_damage(scan.header_line + newlines + 1) or body_problem
    dump = Dump(header, body, scan.header_line, damage, False, newlines + 1)
    scan.header, scan.pending_damage = None, None
    line = scan.line + newlines + 2  # the body's lines and the blank line
    extra = mark - end - 2
    if extra and len(scan.gap.lines) + extra >= GAP_BATCH_LINES:
        scan.line = line
        return dump, end + 2  # the gap text path batches these
    for _ in range(extra):
        scan.gap.lines.append((line, ""))
        line += 1
    scan.line = line
    return dump, mark


def _llvm_banner_line(chunk: bytes, start: int, end: int) -> int:
    """Where the first LLVM banner line in chunk[start:end] starts ("*** IR Dump ", maybe after "; " or
    "# "), or -1. A literal find: a multiline regex would try every position."""
    found = chunk.find(_LLVM_BANNER_TEXT, start, end)
    while found >= 0:
        line = chunk.rfind(b"\n", 0, found) + 1
        if line >= start and chunk[line:found] in (b"", b"; ", b"# "):
            return line
        found = chunk.find(_LLVM_BANNER_TEXT, found + 1, end)
    return -1


def _continue_mlir(scan: _Scanner, chunk: bytes, pos: int, size: int):
    """Consume MLIR body bytes from `pos`; the body ends at the first blank line ("\n" or "\r\n")."""
    blank = _BLANK_END.search(chunk, max(pos - 1, 0), size)
    end = blank.start() if blank else -1
    stop = size if end < 0 else end + 1
    foreign = chunk.find(_MARK, pos, stop)
    llvm = _llvm_banner_line(chunk, pos, stop if foreign < 0 else foreign)
    if llvm >= 0:  # an LLVM banner at a line start ends the MLIR dump as an MLIR one does
        foreign = llvm
    if foreign >= 0:
        # Another banner before this dump's blank line: this dump was cut short or interleaved.
        scan.parts.append(chunk[pos:foreign])
        scan.line += chunk.count(b"\n", pos, foreign)
        at_line_start = foreign == 0 or chunk[foreign - 1] == _NL
        damage = (
            "cut off by the next dump's banner" if at_line_start else "another dump's banner inside this dump"
        )
        body = b"".join(scan.parts).rstrip(b"\r\n")
        if at_line_start and body_damage(body, scan.header.kind) is None:
            damage = None  # complete module, only the blank line is missing
        # Two banners in a row: the body that follows is one of them, which one is unknown.
        scan.ambiguous = at_line_start and not body.strip()
        yield scan.finish(damage)
        if not at_line_start:
            # The interrupting banner starts mid-line: split the line there.
            return (yield from _open_dump(scan, chunk, foreign, size, "started in the middle of another line"))
        return foreign
    if end < 0:
        scan.parts.append(chunk[pos:size])
        scan.line += chunk.count(b"\n", pos, size)
        if scan.oversized():
            yield scan.finish(TOO_BIG)
        return size
    scan.parts.append(chunk[pos : end + 1])
    scan.line += chunk.count(b"\n", pos, end + 1) + 1  # body lines plus the blank line
    yield scan.finish()
    return blank.end()
