"""Pass timing reports in a log's gap text.

Two printers share one banner and are both read here:

- MLIR's `DefaultTimingManager` (`MLIR_ENABLE_TIMING=1`, `mlir-opt --mlir-timing`)::

    ===-------------------------------------------------------------------------===
                             ... Execution time report ...
    ===-------------------------------------------------------------------------===
      Total Execution Time: 0.0034 seconds

      ----Wall Time----  ----Name----
        0.0015 ( 44.7%)  InlinerPass
        0.0000 (  1.2%)    (A) CallGraph
       -0.0003 ( -9.2%)  Rest
        0.0034 (100.0%)  Total

  Rows are `"  %8.4f (%5.1f%%)"` per time column, two spaces, then the name indented two spaces
  per nesting level. A `----User Time----` column comes first when user time differs from wall time.
- LLVM's `TimerGroup` (`LLVM_ENABLE_TIMING`, `opt -time-passes`): "... Pass execution timing report ...",
  `Total Execution Time: X seconds (Y wall clock)`, and User, System, User+System and Wall columns
  (each printed only when non-zero), sometimes Mem and Instr counts. Its rows are not nested.

A report ends at its `Total` row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TIMING_BANNER = "===" + "-" * 73 + "==="

_NUMBER = r"-?(?:\d+(?:\.\d*)?|nan|inf)"
_TIME_CELL = re.compile(
    rf"\s+(?:(?P<time>{_NUMBER}) \(\s*(?P<percent>{_NUMBER})%\)|(?P<blank>-----))", re.IGNORECASE
)
_COUNT_CELL = re.compile(r"\s+(?P<count>-?\d+)")
_TOTAL_LINE = re.compile(
    rf"^\s*Total Execution Time:\s*(?P<total>{_NUMBER}) seconds(?: \((?P<wall>{_NUMBER}) wall clock\))?\s*$",
    re.IGNORECASE,
)
_COLUMN = re.compile(r"-{2,}\s*(?P<name>[A-Za-z][A-Za-z+ ]*?)\s*-{2,}")
_TIME_COLUMNS = {"User Time", "System Time", "User+System", "Wall Time"}
_ANALYSIS = "(A) "


@dataclass
class TimingEntry:
    name: str  # "InlinerPass", "'tt.func' Pipeline", "CallGraph", "Rest", "Total"
    depth: int  # nesting level (each level indents 2 more spaces)
    wall: float  # seconds (can be negative for Rest)
    percent: float  # of the report's total wall time
    analysis: bool  # the row was marked "(A)": an analysis, not a pass
    user: float | None  # when a ----User Time---- column exists


@dataclass
class TimingReport:
    total: float  # seconds of wall time ("Total Execution Time", or the Total row's wall time)
    entries: list[TimingEntry]  # in printed order, Rest and Total included
    first_line: int  # 1-based line number of the report's first line in the log
    text: str = ""  # the report's lines as logged, joined with "\n"
    title: str = "Execution time report"  # the banner's description, without the dots
    complete: bool = True  # False when the lines stop before the Total row (a killed or interleaved run)

    @property
    def last_line(self) -> int:
        return self.first_line + self.text.count("\n")


def looks_like_timing_start(line: str) -> bool:
    """Cheap test for the first banner line of a report."""
    return line.startswith("===-") and line.rstrip().endswith("-===")


def _columns(header: str) -> list[str] | None:
    """Column names from a header such as `  ----User Time----  ----Wall Time----  ----Name----`."""
    names = [match.group("name") for match in _COLUMN.finditer(header)]
    if not names or names[-1] != "Name" or "Wall Time" not in names:
        return None
    return names[:-1]


def _parse_row(line: str, columns: list[str], nested: bool) -> TimingEntry | None:
    pos = 0
    times: dict[str, tuple[float, float] | None] = {}
    for column in columns:
        if column in _TIME_COLUMNS:
            match = _TIME_CELL.match(line, pos)
            if match is None:
                return None
            times[column] = None if match.group("blank") else (float(match["time"]), float(match["percent"]))
        else:
            match = _COUNT_CELL.match(line, pos)
            if match is None:
                return None
        pos = match.end()
    rest = line[pos:]
    if not rest.startswith("  ") or not rest.strip():
        return None
    name = rest.lstrip(" ")
    # Each level indents two more spaces after the two that separate the name from the times.
    depth = max(0, (len(rest) - len(name) - 2) // 2) if nested else 0
    analysis = name.startswith(_ANALYSIS)
    if analysis:
        name = name[len(_ANALYSIS) :]
    wall = times.get("Wall Time")
    user = times.get("User Time")
    return TimingEntry(
        name=name.rstrip(),
        depth=depth,
        wall=wall[0] if wall else 0.0,
        percent=wall[1] if wall else 0.0,
        analysis=analysis,
        user=user[0] if user else None,
    )


def parse_timing_at(lines: list[tuple[int, str]], start: int) -> tuple[TimingReport, int] | None:
    """Parse the report whose banner is at `lines[start]`.

    Returns the report and the index just after its last line, or None when the lines there are
    not a report (a banner without a description and column header is left to the caller).
    """
    count = len(lines)
    if start + 2 >= count or not looks_like_timing_start(lines[start][1]):
        return None
    description = lines[start + 1][1]
    if not looks_like_timing_start(lines[start + 2][1]) or not description.strip():
        return None
    title = description.strip().strip(".").strip()
    index = start + 3
    total: float | None = None
    columns: list[str] | None = None
    # Up to the column header: an optional Total Execution Time line and blank lines.
    while index < count and index <= start + 6:
        text = lines[index][1]
        match = _TOTAL_LINE.match(text)
        if match:
            total = float(match["wall"] if match["wall"] is not None else match["total"])
        elif text.strip():
            columns = _columns(text)
            break
        index += 1
    if columns is None:
        return None
    index += 1
    nested = set(columns) <= {"User Time", "Wall Time"}  # MLIR's tree; LLVM's tables are flat
    entries: list[TimingEntry] = []
    complete = False
    while index < count:
        entry = _parse_row(lines[index][1], columns, nested)
        if entry is None:
            break
        entries.append(entry)
        index += 1
        if entry.name == "Total" and entry.depth == 0:
            complete = True
            break
    if total is None:
        total = entries[-1].wall if complete else sum(e.wall for e in entries if e.depth == 0)
    report = TimingReport(
        total=total,
        entries=entries,
        first_line=lines[start][0],
        text="\n".join(text for _, text in lines[start:index]),
        title=title,
        complete=complete,
    )
    return report, index
