"""The op-index terms of an ingest's distinct texts, found in a helper process, so that this regex
work (a quarter of a big ingest's main-thread time; the regex engine holds the GIL) runs on another
core while the main thread scans the log.

`TermScanner.add` collects texts into batches of `BATCH_BYTES`. A feeder thread writes each batch to
the helper's stdin (`python -m app.insight.op_term_scan`, which imports only app/insight/op_terms.py and hwops) as raw
bytes with `os.writev` (no join, and the GIL is released while the pipe copies), and a collector
thread reads the helper's answers, one per batch and in order. At most `MAX_IN_FLIGHT` batches are
unanswered (beyond that `add` waits), which bounds the texts held here.

The results never depend on the helper: when it cannot be started (no process may be spawned, a
broken interpreter) or it dies, the texts it has not answered are scanned in this process, and so is
every later one. An ingest of less than one batch of distinct text never starts it.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading
from array import array
from collections import deque
from queue import SimpleQueue

from app.helper_process import read_frame, start_helper, write_frame
from app.insight.op_terms import blob_terms

__all__ = ["TermScanner"]

BATCH_BYTES = 1 << 20
BATCH_COUNT = 2000  # most texts per batch
MAX_IN_FLIGHT = 2  # batches sent and not yet answered: their texts stay alive here until then
_HEAD = struct.Struct("<QQ")  # a batch: text count, total bytes; then the lengths, then the texts
_IOV = 512  # buffers per writev call (the system allows 1,024)

Batch = list[tuple[str, bytes]]


class TermScanner:
    """digest -> frozenset of terms, for every text added; `finish` returns them all."""

    def __init__(self, command: list[str] | None = None, batch_bytes: int = BATCH_BYTES) -> None:
        self.command = command or [sys.executable, "-m", "app.insight.op_term_scan"]
        self.batch_bytes = batch_bytes
        self.terms: dict[str, frozenset[str]] = {}
        # One object per distinct set: each answer unpickles new ones, which would otherwise all stay.
        self._sets: dict[frozenset[str], frozenset[str]] = {}
        self.helper_batches = 0  # answered by the helper (the rest were scanned here)
        self._batch: Batch = []
        self._batch_size = 0
        self._process: subprocess.Popen | None = None
        self._tried = False
        self._broken = False
        self._lock = threading.Lock()
        self._unanswered: deque[Batch] = deque()  # sent, in order; the collector pops what is answered
        self._slots = threading.Semaphore(MAX_IN_FLIGHT)
        self._outbox: SimpleQueue[Batch | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []

    def add(self, digest: str, body: bytes) -> None:
        self._batch.append((digest, body))
        self._batch_size += len(body)
        if self._batch_size >= self.batch_bytes or len(self._batch) >= BATCH_COUNT:
            self._send()

    def finish(self) -> dict[str, frozenset[str]]:
        """Wait for every answer (scanning here what the helper could not) and stop the helper."""
        if self._process is None and not self._tried:
            self._scan_here(self._batch)  # less than one batch in all: not worth a process
        else:
            self._send()
        self._stop(kill=False)
        with self._lock:
            left = list(self._unanswered)
            self._unanswered.clear()
        for batch in left:
            self._scan_here(batch)
        return self.terms

    def close(self) -> None:
        """Stop the helper without waiting for its answers (a failed ingest)."""
        self._stop(kill=True)

    # -- the main thread's side ---------------------------------------------------------
    def _send(self) -> None:
        batch, self._batch, self._batch_size = self._batch, [], 0
        if not batch:
            return
        if not self._tried:
            self._start()
        while not self._broken and not self._slots.acquire(timeout=0.1):
            pass
        with self._lock:
            if not self._broken:
                self._unanswered.append(batch)
                self._outbox.put(batch)
                return
            left = list(self._unanswered)
            self._unanswered.clear()
        for pending in (*left, batch):
            self._scan_here(pending)

    def _scan_here(self, batch: Batch) -> None:
        for digest, body in batch:
            terms = blob_terms(body)
            with self._lock:
                self.terms[digest] = self._sets.setdefault(terms, terms)

    def _start(self) -> None:
        self._tried = True
        self._process = start_helper(self.command, stdin=subprocess.PIPE, widen="stdin")
        if self._process is None:
            self._broken = True
            return
        for target, name in ((self._feed, "irlens-terms-feed"), (self._collect, "irlens-terms-collect")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _stop(self, kill: bool) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        if kill:
            process.kill()
        self._outbox.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        process.wait()

    def _fail(self) -> None:
        with self._lock:
            self._broken = True

    # -- the helper threads -----------------------------------------------------------------
    def _feed(self) -> None:
        stdin = self._process.stdin
        fd = stdin.fileno()
        while True:
            batch = self._outbox.get()
            try:
                if batch is None:
                    _write_all(fd, [_HEAD.pack(0, 0)])
                    return
                lengths = array("Q", [len(body) for _, body in batch])
                _write_all(fd, [_HEAD.pack(len(batch), sum(lengths)), lengths.tobytes(), *(body for _, body in batch)])
            except (OSError, ValueError):
                self._fail()  # the helper is gone: the collector sees its end
                return

    def _collect(self) -> None:
        stdout = self._process.stdout
        try:
            while (payload := read_frame(stdout)) is not None:
                answers = pickle.loads(payload)  # our own helper's output: a list of term sets
                with self._lock:
                    if not self._unanswered or len(answers) != len(self._unanswered[0]):
                        break
                    batch = self._unanswered.popleft()
                    for (digest, _), terms in zip(batch, answers):
                        self.terms[digest] = self._sets.setdefault(terms, terms)
                    self.helper_batches += 1
                self._slots.release()
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
        with self._lock:
            if self._unanswered:
                self._broken = True  # what it left unanswered is scanned here by `finish`


def _write_all(fd: int, buffers: list) -> None:
    """writev until every buffer is written (a pipe may take part of a call)."""
    views = [memoryview(buffer) for buffer in buffers if len(buffer)]
    while views:
        written = os.writev(fd, views[:_IOV])
        while written:
            if written >= len(views[0]):
                written -= len(views[0])
                views.pop(0)
            else:
                views[0] = views[0][written:]
                written = 0


def _read_batches(stdin) -> None:
    """The helper: answer each batch with its texts' term sets, until the end mark or end of input."""
    stdout = sys.stdout.buffer
    sets: dict[frozenset[str], frozenset[str]] = {}  # equal sets pickle once per answer
    while True:
        head = stdin.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        count, total = _HEAD.unpack(head)
        if not count:
            return
        lengths = array("Q")
        lengths.frombytes(stdin.read(8 * count))
        data = stdin.read(total)
        if len(lengths) < count or len(data) < total:
            return
        answers, offset = [], 0
        for length in lengths:
            terms = blob_terms(data[offset:offset + length])
            answers.append(sets.setdefault(terms, terms))
            offset += length
        write_frame(stdout, pickle.dumps(answers, protocol=pickle.HIGHEST_PROTOCOL))
        stdout.flush()


if __name__ == "__main__":
    import signal

    # Ctrl-C reaches the whole process group: the ingest stops the helper itself (end of its stdin).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _read_batches(sys.stdin.buffer)
    except BrokenPipeError:  # the ingest is gone; nothing to report to
        pass
