"""Nsight Compute's exports: the source page as CSV, and the raw page for each kernel's launch.

`ncu -i r.ncu-rep --page source --csv --print-source sass` prints, per profiled kernel, a line
`"Kernel Name","matmul_kernel",`, then a header `"Address","Source",<metrics...>` and one row per
SASS instruction. `--print-source cuda,sass` prints per (source file, function) a block
`"File Path","/p/k.py"` / `"Function Name","k"` / `"Line No","Source","Address","Source",...`:
a row per source line (Line No set, its metrics summed) followed by the rows of its instructions
(Line No empty, Address set); `"..."` rows only separate runs of addresses. One kernel's blocks
come together (one per file); the next kernel starts when the function changes, or when a file
or an instruction address comes again (two launches of one function). Per-instruction rows are
the ones read here, so each instruction counts once; the line rows are their sums.

Metrics whose values are averages or ratios ("Avg. Threads Executed", "L1 Conflicts Shared N-Way")
are kept on their instructions but never summed over lines; text columns ("Address Space") and
"-" cells are skipped.

`--page raw --csv` gives one row per kernel in ID order, with a units row: its launch facts
(block size, registers, dynamic shared memory, duration) join the source page's kernels, which
come in the same order, to their compilations.
"""

from __future__ import annotations

import csv
import io
import re

from parsers import json_numbers
from parsers.profiles.profile_records import (
    Kernel,
    Profile,
    ProfileError,
    SassRow,
    add_into,
    line_kind,
    metric_info,
)

__all__ = ["additive", "is_raw_csv", "is_source_csv", "parse_raw_csv", "parse_source_csv"]

_NOT_ADDITIVE = re.compile(r"^(?:Avg\.|Derivative Avg\.)|N-Way|Ratio|\(%\)|%$")
_NUMBER = re.compile(r"^-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?$")


def additive(name: str) -> bool:
    return _NOT_ADDITIVE.search(name) is None


def is_source_csv(path: str, head: bytes) -> bool:
    start = head.lstrip(b"\xef\xbb\xbf")[:40]
    return start.startswith((b'"Kernel Name","', b'"File Path","')) and b'"Address"' in head


def is_raw_csv(path: str, head: bytes) -> bool:
    # the details page starts alike, then names its "Section Name" column
    start = head.lstrip(b"\xef\xbb\xbf")
    return path.endswith(".csv") and start.startswith(b'"ID","Process ID","Process Name"') and b'"Section Name"' not in start[:600]


def _rows(text: str):
    """The CSV's rows; a file the csv module cannot split (a NUL, a stray CR) is refused as a whole."""
    try:
        yield from csv.reader(io.StringIO(text, newline=""))
    except csv.Error as error:
        raise ProfileError(f"not a CSV export ({error})") from None


def _number(cell: str, dropped: list[str] | None = None) -> float | None:
    """The cell's number; None for text, and for 1e400 or beyond 64 bits (listed in `dropped`)."""
    cell = cell.strip()
    if not _NUMBER.match(cell):
        return None
    value = float(cell.replace(",", ""))
    if value.is_integer() and abs(value) <= json_numbers.INT_LIMIT:
        return int(value)
    if not json_numbers.usable(value):
        if dropped is not None:
            dropped.append(cell[:24])
        return None
    return value


class _KernelBuilder:
    def __init__(self, name: str) -> None:
        self.kernel = Kernel(name=name, base=name)
        self.addresses: dict[int, int] = {}  # address -> index in kernel.sass
        self.files: set[str] = set()

    def add(self, address: str, text: str, file: str | None, line: int | None, metrics: dict[str, float]) -> None:
        value = int(address, 16)
        self.addresses[value] = len(self.kernel.sass)
        self.kernel.sass.append(SassRow(0, address, text.strip(), file, line, metrics))

    def finish(self) -> Kernel:
        kernel = self.kernel
        first = min(self.addresses) if self.addresses else 0
        kernel.sass.sort(key=lambda row: int(row.address, 16))
        for row in kernel.sass:
            row.offset = int(row.address, 16) - first
            amounts = {name: value for name, value in row.metrics.items() if additive(name)}
            add_into(kernel.totals, amounts)
            if row.file is not None and row.line is not None:
                kernel.add_line(line_kind(row.file), row.file, row.line, amounts)
            else:
                add_into(kernel.unattributed, amounts)
        return kernel


def _metrics(header: list[str], row: list[str], start: int, dropped: list[str]) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for name, cell in zip(header[start:], row[start:], strict=False):
        value = _number(cell, dropped)
        if value is not None:
            metrics[name] = value
    return metrics


def parse_source_csv(data: bytes) -> Profile:
    """The kernels of one `--page source --csv` export (sass, or cuda,sass)."""
    text = data.decode("utf-8-sig", "replace")
    builders: list[_KernelBuilder] = []
    current: _KernelBuilder | None = None
    header: list[str] | None = None
    file: str | None = None
    function: str | None = None
    line: int | None = None
    dropped: list[str] = []
    for row in _rows(text):
        if not row:
            continue
        first = row[0]
        if first == "Kernel Name" and len(row) > 1:
            current = _KernelBuilder(row[1])
            builders.append(current)
            header, file = None, None
        elif first == "File Path" and len(row) > 1:
            file = row[1]
        elif first == "Function Name" and len(row) > 1:
            if current is None or row[1] != function or file in current.files:
                current = _KernelBuilder(row[1])
                builders.append(current)
            function = row[1]
            current.files.add(file or "")
        elif first in ("Address", "Line No"):
            header = row
        elif header is not None and current is not None:
            if header[0] == "Address":
                if row[0] not in ("...", "-", ""):
                    current.add(row[0], row[1], None, None, _metrics(header, row, 2, dropped))
                continue
            if first:
                line = int(first) if first.isascii() and first.isdigit() and len(first) < 10 else None
                continue
            address = row[2] if len(row) > 2 else ""
            if address in ("...", "-", ""):
                continue
            if int(address, 16) in current.addresses:  # a second launch of the same function
                current = _KernelBuilder(current.kernel.name)
                builders.append(current)
                current.files.add(file or "")
            current.add(address, row[3], file, line, _metrics(header, row, 4, dropped))
    if not builders:
        raise ProfileError("no kernel in this Nsight Compute export")
    kernels = [builder.finish() for builder in builders]
    names = sorted({name for kernel in kernels for row in kernel.sass for name in row.metrics})
    note = json_numbers.dropped_note(dropped)
    return Profile(tool="ncu", mode="source", kernels=kernels, metrics=[metric_info(name) for name in names],
                   notes=[note] if note else [])


_RAW_FIELDS = {
    "launch__block_size": "block_size",
    "launch__registers_per_thread": "registers",
    "launch__shared_mem_per_block_dynamic": "shared_dynamic",
    "launch__grid_size": "grid_size",
    "gpu__time_duration.sum": "time",
}
_TIME_UNITS = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
_BYTE_UNITS = {"byte": 1, "Kbyte": 1000, "Mbyte": 1e6, "KB": 1000, "MB": 1e6}


def parse_raw_csv(data: bytes) -> list[dict]:
    """One dict per kernel of a `--page raw --csv` export: id, name, and the launch facts read
    (block_size, registers, shared_dynamic in bytes, time_ns)."""
    rows = list(_rows(data.decode("utf-8-sig", "replace")))
    if len(rows) < 2 or rows[0][:1] != ["ID"]:
        raise ProfileError("not an ncu raw-page export")
    header, units = rows[0], rows[1]
    out = []
    for row in rows[2:]:
        if not row or not (row[0].isascii() and row[0].isdigit()) or len(row[0]) > 18:
            continue
        facts: dict = {"id": int(row[0]), "name": row[header.index("Kernel Name")] if "Kernel Name" in header else ""}
        for column, key in _RAW_FIELDS.items():
            if column not in header:
                continue
            index = header.index(column)
            value = _number(row[index]) if index < len(row) else None
            if value is None:
                continue
            unit = units[index].split("/")[0] if index < len(units) else ""
            if key == "time":
                facts["time_ns"] = value * _TIME_UNITS.get(unit, 1)
            elif key == "shared_dynamic":
                facts[key] = round(value * _BYTE_UNITS.get(unit, 1))
            else:
                facts[key] = value
        out.append(facts)
    return out
