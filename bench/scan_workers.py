"""The log scan over N byte ranges cut at banner starts, one process each: CPU per MB, the wall a
core per worker would give, and whether the reassembled records equal one scan's
(`python -m bench.scan_workers [LOG] [N...]`). A measurement of the design issue 29 item 2 asks for,
not the ingest's code (app/ingest/log_prescan.py still scans a log in one helper).

A range starts at an MLIR banner that follows a blank line: there the one scan has closed whatever
came before (a blank line ends an MLIR dump, a banner at a line start ends an LLVM dump and gap
text), no banner is pending, and the scanner's other state is set again by that banner. A range is
scanned together with the next range's banner line, which ends its last dump as in one scan; the
records from that banner on are the next range's. Line numbers are shifted by the lines before.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

MLIR_CUT = b"\n\n// -----// IR Dump "
WINDOW = 16 << 20


def cut_points(path: Path, parts: int) -> list[int]:
    """Range starts: 0, then the first MLIR banner after a blank line past each 1/parts of the file."""
    size = path.stat().st_size
    starts = [0]
    with open(path, "rb") as file:
        for k in range(1, parts):
            file.seek(k * size // parts)
            window = file.read(WINDOW)
            found = window.find(MLIR_CUT)
            if found >= 0:
                start = k * size // parts + found + 2
                if start > starts[-1]:
                    starts.append(start)
    return starts


class _Range:
    """file[start:stop] as a stream."""

    def __init__(self, path: Path, start: int, stop: int) -> None:
        self.file = open(path, "rb")  # noqa: SIM115 -- closed by the worker
        self.file.seek(start)
        self.left = stop - start

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.file.read(size)
        self.left -= len(data)
        return data


def _line(record) -> int:
    lines = getattr(record, "lines", None)
    return lines[0][0] if lines else record.line


def scan_range(path: str, start: int, end: int) -> tuple[list[tuple], int, float]:
    """(records in a small form, lines before `end`, CPU seconds) of file[start:end] followed by the
    banner line at `end` (none at the file's end)."""
    from parsers.log import scan_log
    from parsers.records import Dump, GapBlock

    cpu = time.process_time()
    size = os.path.getsize(path)
    stop = end
    if end < size:
        with open(path, "rb") as file:
            file.seek(end)
            stop = end + file.readline().__len__()
    stream = _Range(Path(path), start, stop)
    out: list[tuple] = []
    last = 0
    for record in scan_log(stream):
        kind = type(record)
        if kind is Dump:
            out.append(("dump", record.header.raw, hashlib.sha1(record.body).digest(), record.line,
                        record.damage, record.truncated))
        elif kind is GapBlock:
            out.extend(("gap", number, text) for number, text in record.lines)
        else:
            out.append((kind.__name__, record.line, getattr(record, "text", None)))
        last = max(last, _line(record))
    stream.file.close()
    banner_line = last if end < size else last + 1  # the next range's banner: its records are dropped
    kept = [item for item in out if (item[3] if item[0] == "dump" else item[1]) < banner_line] if end < size else out
    return kept, banner_line - 1, time.process_time() - cpu


def shifted(item: tuple, by: int) -> tuple:
    if item[0] == "dump":
        return (*item[:3], item[3] + by, *item[4:])
    return (item[0], item[1] + by, item[2])


def run(path: Path, workers: int, processes: int) -> dict:
    """The scan of `path` in `workers` ranges on `processes` processes; CPU from each worker."""
    starts = cut_points(path, workers)
    ends = [*starts[1:], path.stat().st_size]
    wall = time.perf_counter()
    with ProcessPoolExecutor(processes) as pool:
        results = list(pool.map(scan_range, [str(path)] * len(starts), starts, ends))
    wall = time.perf_counter() - wall
    records, offset = [], 0
    for kept, lines, _ in results:
        records.extend(shifted(item, offset) for item in kept)
        offset += lines
    cpus = [cpu for _, _, cpu in results]
    return {"ranges": len(starts), "cpu": cpus, "wall": wall, "records": records}


def main(argv: list[str]) -> None:
    from bench import inputs

    path = Path(argv[0]) if argv else inputs.big_log(356 * inputs.MiB)
    counts = [int(arg) for arg in argv[1:]] or [1, 2, 4]
    mb = path.stat().st_size / 1e6
    one = None
    for workers in counts:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        result = run(path, workers, min(workers, os.cpu_count() or 1))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        children = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if one is None:
            one = result["records"]
        same = result["records"] == one
        cpus = result["cpu"]
        print(f"{workers} worker(s), {result['ranges']} ranges: scan CPU {sum(cpus):.2f} s "
              f"({sum(cpus) / mb * 1000:.2f} ms/MB), processes {children:.2f} s; slowest range "
              f"{max(cpus):.2f} s (the wall with a core each); wall here {result['wall']:.2f} s; "
              f"records equal to 1 worker's: {same}; load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
