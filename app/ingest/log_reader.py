"""One log file: its dumps become snapshots of compilations, its other lines the log's text (kept whole,
compressed as it streams by), diagnostics and timing reports."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import BinaryIO

import zstandard

from app.ingest.log_prescan import LogPrescan
from app.ingest.state import IngestState, LogResult
from parsers.autotuning.autotune import AutotuneScanner, may_hold
from parsers.helion.generated import PRINTED_HEADER, PrintedCode
from parsers.literal_scan import LiteralSet
from parsers.logs.diagnostics import LogLines, parse_gap
from parsers.logs.log import NO_MODULE, body_damage, scan_log
from parsers.logs.reproducer import Reproducer, find_reproducer
from parsers.logs.timing import TimingReport
from parsers.records import CutLine, Dump, GapBlock, UnknownBanner

LONG_LINE = 1 << 20  # a gap line longer than this is reported: binary junk or a runaway print
# Another thread's autotune table interleaved into a dump holds one of these (parsers/autotuning/autotune.py).
_AUTOTUNE_HINTS = LiteralSet((b" ms ", b"AUTOTUNE", b"utotuning"))
_SNIFFED = 8  # bodies whose hint answer is remembered (an unchanged pass hands out the last one again)


class _LogText:
    """A log's non-IR lines, hashed and compressed as they stream by (in blocks: most adds are the
    single blank line between two dumps)."""

    BLOCK = 1 << 20

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.compressor = zstandard.ZstdCompressor(level=3).compressobj()
        self.parts: list[bytes] = []
        self.buffer: list[str] = []
        self.buffered = 0
        self.size = 0

    def add(self, text: str) -> None:
        self.buffer.append(text)
        self.buffered += len(text)
        if self.buffered >= self.BLOCK:
            self._compress()

    def _compress(self) -> None:
        data = "".join(self.buffer).encode("utf-8")
        self.buffer, self.buffered = [], 0
        self.digest.update(data)
        self.size += len(data)
        self.parts.append(self.compressor.compress(data))

    def finish(self) -> tuple[str, int, bytes]:
        self._compress()
        self.parts.append(self.compressor.flush())
        return self.digest.hexdigest(), self.size, b"".join(self.parts)


NO_IR_NOTE = "no Triton IR, diagnostics or timing report: kept as log lines"


class LogReader:
    """Reads logs into ``state.logs``; ``bytes_read`` says how far the upload has been read."""

    def __init__(
        self, state: IngestState, bytes_read: Callable[[], int], prescan: LogPrescan | None = None
    ) -> None:
        self.state = state
        self.bytes_read = bytes_read
        self.prescan = prescan  # a helper process already scanning this ingest's plain logs

    def read(self, path: str, stream: BinaryIO, origin: str | None = None) -> str | None:
        """Scan one log (`origin`: a path its file can be opened by, if any); returns the blob of its
        non-IR text (None when it has none)."""
        problem = self.state.problem
        result = LogResult(path)
        text = _LogText()
        start = self.bytes_read()
        replaced = 0
        dumps = 0  # dumps and dump banners, parsed or not
        autotune = AutotuneScanner()  # autotuning results printed among the other lines
        sniffed: dict[int, tuple[bytes, bool]] = {}  # id(body) -> (body, holds an autotune hint)
        printed = PrintedCode()  # Helion's generated modules (HELION_PRINT_OUTPUT_CODE=1)

        def process(record, digest: str | None, terms: frozenset[str] | None) -> None:
            nonlocal replaced, dumps
            kind = type(record)
            if kind is Dump:
                dumps += 1
                printed.finish()
                body = record.body
                # another thread's autotune table interleaved into a dump: one scan per distinct body
                # (the body of an unchanged pass is the same object again), for all three hints at once
                known = sniffed.get(id(body))
                if known is None or known[0] is not body:
                    if len(sniffed) >= _SNIFFED:
                        sniffed.clear()
                    known = sniffed[id(body)] = (body, _AUTOTUNE_HINTS.any(body))
                if known[1]:
                    for offset, line in enumerate(body.decode("utf-8", "replace").split("\n")):
                        autotune.feed(record.line + 1 + offset, line)
                self._add_dump(result, record, path, digest, terms)
            elif kind is GapBlock:
                if len(record.lines) == 1 and not record.lines[0][1]:
                    text.add("\n")  # the blank line between two dumps: nothing to parse
                    return
                joined = "".join(line + "\n" for _, line in record.lines)
                text.add(joined)
                if printed.reading or PRINTED_HEADER in joined:
                    printed.feed(record.lines)
                if may_hold(joined):  # most gap blocks hold no autotuning result: one substring scan
                    for number, line in record.lines:
                        autotune.feed(number, line)
                result.reproducer = find_reproducer(record.lines) or result.reproducer
                result.trace.add_lines(record.lines)
                for parsed in parse_gap(record.lines):
                    self._add_gap_record(result, parsed)
                replaced += sum(1 for _, line in record.lines if "\ufffd" in line)
                for number, line in record.lines:
                    if len(line) > LONG_LINE:
                        problem("warning", f"a log line of {len(line) / 1e6:.1f} million characters, "
                                "not IR: kept as log text", path=path, line=number)
            elif kind is CutLine:
                problem("warning", f"a line of {(record.kept + record.dropped) / 1e6:.1f} MB: only its "
                        f"first {record.kept / 1e6:.1f} MB kept", path=path, line=record.line)
            elif isinstance(record, UnknownBanner):
                dumps += 1
                problem("warning", "a dump banner irlens cannot parse; kept as log text",
                        path=path, line=record.line, header=record.text)

        scanned = self.prescan.records(origin, stream) if self.prescan is not None else None
        if scanned is None:
            scanned = ((record, None, None) for record in scan_log(stream))
        for record, digest, terms in scanned:
            process(record, digest, terms)
        printed.finish()
        self._add_printed_code(printed, path)
        if replaced:
            problem("warning", f"{replaced} log lines hold bytes that are not UTF-8 (shown as \ufffd)", path=path)
        for kernel, orphan in result.grouper.orphans:
            problem(
                "orphan-dump",
                f"{orphan.header.kind} dump of {kernel or 'an unknown kernel'} before any compilation in this log; "
                "kept, but not part of a compilation",
                path=path, line=orphan.line, header=orphan.header.raw, blob=orphan.blob,
            )
        if (not dumps and not result.diagnostics and not result.timings and not autotune.entries
                and self.bytes_read() > start):
            # A capture's meta.txt or a program's stdout: expected beside the logs, so a note on the
            # file (the run page lists them), not a warning.
            result.note = NO_IR_NOTE
        self.state.logs.append(result)
        if autotune.entries:
            self.state.run.autotune = (self.state.run.autotune or []) + [
                dict(entry, log=path) for entry in autotune.entries]
        digest, size, compressed = text.finish()
        return self.state.blobs.put_compressed(digest, size, compressed) if size else None

    def _add_printed_code(self, printed: PrintedCode, path: str) -> None:
        """Each generated module Helion printed becomes a source of the run under the path it was
        written to, which the IR's loc() entries name (a file of that path uploaded too is kept beside)."""
        for block in printed.blocks:
            if block.path not in self.state.sources:
                self.state.add_source(block.path, block.text.encode("utf-8"), block.text)

    def _add_dump(self, result: LogResult, dump: Dump, path: str, digest: str | None = None,
                  terms: frozenset[str] | None = None) -> None:
        """`digest` and `terms`: the body's sha256 and op-index terms, when the log's helper found them."""
        reproducer, result.reproducer = result.reproducer, None  # it belongs to the next dump only
        if dump.header.failed and dump.damage == NO_MODULE and reproducer is not None:
            dump = self._reproducer_dump(dump, reproducer, path)
            digest = terms = None
        digest = self.state.blobs.put(dump.body, digest)
        if dump.damage:
            self.state.run.damaged += 1
            self.state.problem("damaged-dump", dump.damage, path=path, line=dump.line, header=dump.header.raw,
                               blob=digest)
            if dump.truncated:
                result.grouper.mark_truncated("the log ends inside its last dump")
            if dump.header.failed:
                result.grouper.mark_current_failed(dump.header)
            return
        self.state.op_index.add_blob(digest, dump.body, terms)
        result.grouper.add(dump, digest, result.trace.take(dump.header))

    def _reproducer_dump(self, dump: Dump, reproducer: Reproducer, path: str) -> Dump:
        """The failed pass's dump printed no module (only aliases and #loc lines): the module MLIR's
        reproducer printed just before it is the IR at the failure. It stands in for the dump's
        body under the dump's banner; the dump's own text is kept with a note."""
        self.state.problem(
            "warning",
            f"the dump after the failed pass {dump.header.pass_name} holds no module: its snapshot is the "
            f"module of MLIR's reproducer printed before it (log lines {reproducer.first_line}-{reproducer.last_line})",
            path=path, line=dump.line, header=dump.header.raw, blob=self.state.blobs.put(dump.body),
        )
        body = reproducer.text.encode("utf-8")
        return Dump(dump.header, body, dump.line, body_damage(body, "mlir"), dump.truncated)

    @staticmethod
    def _add_gap_record(result: LogResult, parsed) -> None:
        if isinstance(parsed, LogLines):
            return
        if isinstance(parsed, TimingReport):
            current = result.grouper.compilations[-1] if result.grouper.compilations else None
            result.timings.append((parsed, current))
            return
        result.diagnostics.append((parsed, len(result.grouper.compilations)))
