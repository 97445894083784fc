"""Plain logs (the files given to `irlens ingest`, a server's large uploaded parts) scanned
(parsers/logs/log.py: scan_log) in a helper process, on the other core, while this process imports
SQLAlchemy (the CLI starts the helper before its imports), groups dumps and writes rows, or serves
pages.

`LogPrescan.start(paths)` starts `python -m app.ingest.log_prescan PATH...`, which takes each path that is
a plain log (not an archive or a compressed file, and "log" to parsers/registry.py, as the ingest's
own walk decides) and writes its records in order, a batch at a time, each batch a pickle behind its
length. A new body comes with its sha256 (the hashing moves to the helper too); a body the scanner
handed out again (an unchanged pass: the same bytes object) comes as a reference to the earlier one,
so the ingest gets the same object back, as from a scan of its own. Each batch says how far into the
file the helper has read, and the ingest reads its own stream that far: byte counts, progress and
upload limits are what a scan here gives. For inputs up to `TERMS_BYTES` the helper also finds each
new body's op-index terms (app/insight/op_terms.py): it finishes such a log before the ingest's imports do,
so that work costs the ingest nothing. Bigger logs keep the helper busy scanning, and their terms
are found as without it, by the op index's own helper (app/insight/op_term_scan.py): the ingest's process is
left with grouping and writing, and a server's with the pages it serves meanwhile. The server's
uploads are temp files without a name: `upload_path` gives the helper one through /proc.

On a machine of several cores a big log is scanned by several helpers (`workers`: one per core the
process may run on but one, IRLENS_SCAN_WORKERS to set it), each taking in turn the next byte range of
about `RANGE_BYTES`, cut at banner starts (app/ingest/log_ranges.py says where and why the records
are those of one scan); the ingest takes the ranges' records in order and shifts their line numbers.
Several helpers find the terms of any log.

A reader thread keeps up to `BUFFER_BYTES` of the helpers' output (shared among them), which lets the helper run ahead
while this process imports, and bounds the memory it costs. The records never depend on the helper:
when it cannot start, dies, or skips a file the ingest reads as a log, the ingest scans that file
itself (from the record the helper stopped at) and every later one.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
from collections import OrderedDict, deque
from collections.abc import Iterator
from typing import BinaryIO

from app.helper_process import start_helper, write_frame
from app.ingest.log_ranges import shifted, shifted_damage
from app.ingest.prescan_reader import FrameReaders

__all__ = ["LogPrescan", "upload_path"]

MIN_BYTES = 4 << 20  # smaller inputs are scanned in process: a helper costs ~60 ms of CPU to start
TERMS_BYTES = 64 << 20  # inputs up to this size get their op-index terms from the helper too
BUFFER_BYTES = 32 << 20  # the helper's output held here at most (the pipe itself holds 1 MB)
BATCH_BYTES = 1 << 20  # body bytes per batch
BATCH_RECORDS = 512
RECENT_BODIES = 64  # new bodies either side keeps for references (both drop the oldest first)
RANGE_BODIES = 8  # bodies by digest across a range's start: a pass unchanged over it keeps its object
MAX_HEADERS = 8192  # banners the helper numbers before it starts over (and sends them again)
READ_BYTES = 8 << 20
RANGE_BYTES = 32 << 20  # a range per helper turn: small enough that each runs ahead of the ingest
HOLD = 4  # records held back at a range's end: those of the next range's banner line are dropped

# A batch's items. NEW: (NEW, header number, header or None, body, sha256, terms or None, line, damage,
# truncated, line_count). SAME: (SAME, header number, header or None, body number, line, damage, truncated,
# line_count). OTHER: (OTHER, record): gap blocks, unknown banners, cut lines.
NEW, SAME, OTHER = 0, 1, 2
# Messages: ("batch", file, offset, items), ("end", file, lines, last), ("skip", file), ("error", file, text).
# "end" closes a range: `lines` lines are in it, `last`: the file's last range.

# A scan_log record; for a dump, its body's sha256 and op-index terms when known.
Record = tuple[object, str | None, frozenset[str] | None]


class LogPrescan:
    """The helper's records for the files it was given; `records(path, stream)` hands them out."""

    def __init__(self, paths: list[str], process: subprocess.Popen | list[subprocess.Popen],
                 finds_terms: bool = False) -> None:
        self.paths = paths
        self.processes: list[subprocess.Popen] = process if isinstance(process, list) else [process]
        self.finds_terms = finds_terms  # it sends each new whole body's op-index terms
        self.files_scanned = 0  # files whose records all came from the helpers
        self._next_file = 0  # the first index in `paths` the ingest may still ask for
        self._turn = 0  # the helper whose output holds the next range
        self._recent: OrderedDict[str, bytes] = OrderedDict()  # digest -> body, across ranges
        self._frames = FrameReaders([process.stdout for process in self.processes],
                                    BUFFER_BYTES // len(self.processes))

    @property
    def process(self) -> subprocess.Popen | None:
        """The (first) helper, None once stopped."""
        return self.processes[0] if self.processes else None

    @classmethod
    def start(cls, paths: list[str], command: list[str] | None = None, min_bytes: int = MIN_BYTES,
              workers: int | None = None, range_bytes: int | None = None) -> LogPrescan | None:
        """A helper scanning the plain files among `paths`; None when they are too small to gain (or
        are all archives and compressed files, which the ingest's walk opens)."""
        from parsers.inputs.source_names import kind_of

        files: list[tuple[str, int]] = []
        for path in paths:
            try:
                if os.path.isfile(path):
                    with open(path, "rb") as file:
                        if kind_of(file.read(512)) is None:
                            files.append((os.path.abspath(path), os.path.getsize(path)))
            except OSError:
                continue
        total = sum(size for _, size in files)
        if not files or total < min_bytes:
            return None
        names = [path for path, _ in files]
        range_bytes = RANGE_BYTES if range_bytes is None else range_bytes
        count = min(workers or _cores(), -(-total // range_bytes)) if range_bytes > 0 else 1
        # Several helpers find the terms too: spread over them, the terms no longer wait on the one
        # op-term helper (on 2 cores, with 2 helpers, the same CPU either way, and 10-15 MiB less RSS).
        terms = ["--terms"] if total <= TERMS_BYTES or count > 1 else []
        processes = []
        for worker in range(max(1, count)):
            ranges = ["--ranges", f"{worker}/{count}/{range_bytes}"] if count > 1 else []
            process = start_helper([*(command or [sys.executable, "-m", "app.ingest.log_prescan"]), *ranges,
                                    *terms, *names], stdin=subprocess.DEVNULL, widen="stdout")
            if process is None:
                for started in processes:
                    started.kill()
                    started.wait()
                return None
            processes.append(process)
        return cls(names, processes, finds_terms=bool(terms))

    # -- the ingest's side -----------------------------------------------------------------
    def records(self, path: str | None, stream: BinaryIO) -> Iterator[Record] | None:
        """The records of the log at OS path `path` (its ingest stream: `stream`), or None when the
        helper was not given that file (or has stopped): scan it as usual."""
        if path is None or self.process is None:
            return None
        try:
            index = self.paths.index(os.path.abspath(path), self._next_file)
        except ValueError:
            return None
        self._next_file = index + 1
        return self._records(index, path, stream)

    def _records(self, index: int, path: str, stream: BinaryIO) -> Iterator[Record]:
        reader = _StreamFollower(stream)
        yielded = 0
        finished = False
        try:
            for record, digest, terms, offset in self._helper_records(index):
                reader.read_to(offset)
                yielded += 1
                yield record, digest, terms
            finished = self.process is not None
        finally:
            if not finished:
                self.close()  # failed, or the ingest stopped: the helper is of no more use
        if finished:
            self.files_scanned += 1
        else:
            yield from _scan_here(path, stream, reader, yielded)
        reader.read_to(None)

    def _helper_records(self, index: int) -> Iterator[tuple[object, str | None, frozenset[str] | None, int]]:
        """Until the helpers' end of file `index`, range after range; stops early (closing the
        helpers) when one fails."""
        from parsers.records import Dump

        base = 0  # lines of the file's ranges before this one
        while True:
            helper = self._turn
            self._turn = (self._turn + 1) % self._frames.count
            headers: dict[int, object] = {}
            bodies: OrderedDict[int, tuple[bytes, str, frozenset[str] | None]] = OrderedDict()
            numbered = 0
            while True:
                message = self._frames.next_message(helper)
                if message is None:
                    self.close()  # a helper died
                    return
                kind, file = message[0], message[1]
                if kind == "skip" and file < index:
                    break  # a file the ingest did not read as a log: its one turn is taken
                if file > index or kind in ("skip", "error"):
                    self.close()  # skipped or failed: the ingest scans it, and every later file
                    return
                if kind == "end":
                    if file == index and message[3]:
                        return
                    base = base + message[2] if file == index else 0
                    break
                if file < index:
                    continue  # a file the ingest did not read as a log
                offset, items = message[2], message[3]
                for item in items:
                    code = item[0]
                    if code == OTHER:
                        yield shifted(item[1], base), None, None, offset
                        continue
                    if item[2] is not None:
                        headers[item[1]] = item[2]
                    if code == NEW:
                        body, digest, terms = item[3], item[4], item[5]
                        body = self._recent.get(digest, body)  # the same object as a range before gave
                        self._recent[digest] = body
                        if len(self._recent) > RANGE_BODIES:
                            self._recent.popitem(last=False)
                        bodies[numbered] = (body, digest, terms)
                        numbered += 1
                        if len(bodies) > RECENT_BODIES:
                            bodies.popitem(last=False)
                    else:
                        body, digest, terms = bodies[item[3]]
                    line, damage, truncated, line_count = item[-4:]
                    yield (Dump(headers[item[1]], body, line + base, shifted_damage(damage, base), truncated,
                                line_count), digest, terms, offset)

    def close(self) -> None:
        """Stop the helpers; what they have not sent is not needed."""
        processes, self.processes = self.processes, []
        for process in processes:
            process.kill()
        self._frames.stop()
        for process in processes:
            try:
                process.stdout.close()
            except OSError:
                pass
            process.wait()


def _cores() -> int:
    """The helpers to start: IRLENS_SCAN_WORKERS, else one per core this process may run on, less
    the one the ingest's own process needs (it takes the records, groups and writes them). On 2
    cores that is one helper: a second costs 0.3-0.7 s of CPU and 25 MiB per GB-sized log and buys
    no wall time there, where the ingest's processes already keep both cores busy (bench/NOTES.md,
    Round 10)."""
    try:
        wanted = int(os.environ.get("IRLENS_SCAN_WORKERS", "0"))
    except ValueError:
        wanted = 0
    if wanted > 0:
        return wanted
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores - 1)


def upload_path(stream) -> str | None:
    """A path the helper can open for an uploaded part held in a temp file (Linux: /proc/PID/fd/N
    opens the file anew, deleted or not, with a position of its own); None for a part still in memory
    or not at its start."""
    if getattr(stream, "_rolled", True) is False:  # a SpooledTemporaryFile still in memory
        return None
    try:
        if stream.tell() != 0:
            return None
        stream.flush()  # what the multipart parser wrote, for the helper to read
        path = f"/proc/{os.getpid()}/fd/{stream.fileno()}"
    except (AttributeError, OSError, ValueError):
        return None
    return path if os.path.isfile(path) else None


class _StreamFollower:
    """Moves the ingest's stream of a log on to where the helper's records reach, so that its byte
    counts and limits act as if it had read them: by a seek where the stream can (a plain file; the
    helper read those bytes), by reading them otherwise."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.position = 0
        self._skip = getattr(stream, "skip", None)

    def read_to(self, offset: int | None) -> None:
        """Up to byte `offset` of the file (None: its end)."""
        while offset is None or self.position < offset:
            size = READ_BYTES if offset is None else min(READ_BYTES, offset - self.position)
            moved = self._skip(size) if self._skip is not None else len(self.stream.read(size))
            if not moved:
                return
            self.position += moved


def _scan_here(path: str, stream: BinaryIO, reader: _StreamFollower, skip: int) -> Iterator[Record]:
    """The file's records after the first `skip`, scanned in this process: from the ingest's own
    stream when none of it was read yet, else from the file opened again."""
    from parsers.logs.log import scan_log

    if reader.position == 0:
        for record in scan_log(stream):
            yield record, None, None
        return
    with open(path, "rb") as again:
        for number, record in enumerate(scan_log(again)):
            if number >= skip:
                yield record, None, None


# -- the helper ------------------------------------------------------------------------------
class _Sender:
    """Numbers banners and recent bodies as the ingest's side does, and writes batches."""

    def __init__(self, out, terms: bool = False) -> None:
        self.out = out
        self.terms = terms  # find each new body's op-index terms
        self.headers: dict[int, tuple[object, int]] = {}  # id -> (header, number): kept alive
        self.bodies: OrderedDict[int, tuple[bytes, int]] = OrderedDict()  # id -> (body, number)
        self.numbered = 0

    def header(self, header) -> tuple[int, object | None]:
        known = self.headers.get(id(header))
        if known is not None:
            return known[1], None
        if len(self.headers) >= MAX_HEADERS:
            self.headers.clear()
        number = len(self.headers)
        self.headers[id(header)] = (header, number)
        return number, header

    def dump_item(self, dump) -> tuple:
        number, header = self.header(dump.header)
        tail = (dump.line, dump.damage, dump.truncated, dump.line_count)
        known = self.bodies.get(id(dump.body))
        if known is not None:
            return (SAME, number, header, known[1], *tail)
        self.bodies[id(dump.body)] = (dump.body, self.numbered)
        self.numbered += 1
        if len(self.bodies) > RECENT_BODIES:
            self.bodies.popitem(last=False)
        terms = None
        if self.terms and not dump.damage:  # the ingest indexes whole dumps only
            from app.insight.op_terms import blob_terms

            terms = blob_terms(dump.body)
        return (NEW, number, header, dump.body, hashlib.sha256(dump.body).hexdigest(), terms, *tail)

    def send(self, message: tuple) -> None:
        write_frame(self.out, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _is_log(path: str) -> bool:
    """Whether the ingest's walk reads this file as a plain log."""
    from parsers import registry
    from parsers.inputs.source_names import base_name, display_path, kind_of

    with open(path, "rb") as raw:
        head = raw.read(8192)
    return bool(head) and kind_of(head[:512]) is None and registry.classify(
        display_path(base_name(path) or "input"), head
    ).role == "log"


def _scan_file(file: int, path: str, out, terms: bool = False) -> None:
    """The whole file as one range (one helper)."""
    if not _is_log(path):
        _Sender(out).send(("skip", file))
        return
    _scan_range(file, path, 0, None, out, terms)


def _scan_range(file: int, path: str, start: int, end: int | None, out, terms: bool = False) -> None:
    """The records of file[start:end] (end None: to the end of the file), then ("end", file, lines,
    last). Before `end` there is the next range's banner, which is scanned too (it ends this range's
    last dump as in one scan) and whose records are dropped."""
    from app.ingest.log_ranges import RangeStream, ends_before, last_line, next_banner_end
    from parsers.logs.log import CHUNK_SIZE, scan_log
    from parsers.records import Dump

    sender = _Sender(out, terms)  # numbers start again with each range, as on the ingest's side
    with open(path, "rb") as raw:
        stop = None if end is None else next_banner_end(raw, end)
        stream = RangeStream(raw, start, stop, CHUNK_SIZE)
        items: list[tuple] = []
        size = 0
        held: deque = deque()

        def add(record) -> None:
            nonlocal items, size
            if type(record) is Dump:
                item = sender.dump_item(record)
                if item[0] == NEW:
                    size += len(record.body)
            else:
                item = (OTHER, record)
            items.append(item)
            if size >= BATCH_BYTES or len(items) >= BATCH_RECORDS:
                sender.send(("batch", file, min(stream.position, end or stream.position), items))
                items, size = [], 0

        for record in scan_log(stream):
            held.append(record)
            if end is not None and len(held) <= HOLD:
                continue
            add(held.popleft())
        lines = 0
        if end is not None and held:
            banner_line = max(map(last_line, held))
            held = ends_before(list(held), banner_line)
            lines = banner_line - 1
        for record in held:
            add(record)
        sender.send(("batch", file, min(stream.position, end or stream.position), items))
        sender.send(("end", file, lines, end is None))


def main(arguments: list[str]) -> None:
    worker, workers, range_bytes = 0, 1, 0
    if arguments[:1] == ["--ranges"]:
        worker, workers, range_bytes = map(int, arguments[1].split("/"))
        arguments = arguments[2:]
    terms = arguments[:1] == ["--terms"]
    paths = arguments[1:] if terms else arguments
    out = sys.stdout.buffer
    turn = 0  # ranges of all files, in order: this helper scans every `workers`-th from `worker`
    for file, path in enumerate(paths):
        try:
            if workers == 1:
                _scan_file(file, path, out, terms)
                continue
            from app.ingest.log_ranges import plan

            ranges = plan(path, range_bytes) if _is_log(path) else None
            for number, (start, end) in enumerate(ranges or [(0, None)]):
                if turn % workers == worker:
                    if ranges is None:
                        _Sender(out).send(("skip", file))
                    else:
                        _scan_range(file, path, start, end, out, terms)
                turn += 1
        except Exception as error:  # noqa: BLE001 -- the ingest scans the file itself, and reports what it finds
            _Sender(out).send(("error", file, f"{type(error).__name__}: {error}"))
            break
    out.flush()


if __name__ == "__main__":
    import signal

    # Ctrl-C reaches the whole process group: the ingest stops the helper itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        main(sys.argv[1:])
    except BrokenPipeError:  # the ingest is gone; nothing to report to
        pass
