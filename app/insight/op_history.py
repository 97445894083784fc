"""Op history: one op (an IR line, an SSA value, or a Python line) followed through every pass.

SSA numbers change from pass to pass, so an op is followed by its location: the Python `file:line:col`
its `loc` resolves to (aliases, callsites and fused locations through parsers/locations/mlir.py), narrowed by the
result's NameLoc (the Python variable name) when it has one. In each snapshot the ops at that location
are listed with their result types and layouts; between two snapshots the history says which pass
made the op appear, rewrote it into other ops, changed its type or layout, or removed it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from app.render import SizedLRU
from parsers.locations.loc import resolve

TextLoader = Callable[[], str | None]
_OPS = SizedLRU(max_bytes=32 << 20, max_items=10_000)
MAX_OPS_SHOWN = 12  # ops listed per snapshot (a Python line can become hundreds after unrolling)

_OP_LINE = re.compile(r' *(?:(%[^=]*?) = )?"?([a-z_][\w$]*\.[\w$.]*\w)')
_LAYOUT_DEF = re.compile(r"^(#[\w$.-]+) = (#[\w.]+)<", re.MULTILINE)
_ALIAS = re.compile(r"#[A-Za-z_][\w$.-]*")
_VALUE = re.compile(r"%[\w$.-]+")


@dataclass(frozen=True)
class OpLine:
    line: int  # 1-based
    op: str
    results: str  # "%5" or "%a, %b:2", "" for none
    type: str  # the result type as printed (after " : " or "->"), loc() removed
    layouts: tuple[str, ...]  # layout kinds the type uses: ("blocked",), ("nvidia_mma", "dot_op")...
    loc: tuple[str, int, int | None] | None  # (file, line, col) of the primary frame
    name: str | None  # NameLoc


def _type_of(code: str) -> str:
    code = code.split(" loc(", 1)[0].rstrip(" {")
    if "->" in code:
        return code.rsplit("->", 1)[1].strip()
    if " : " in code:
        return code.rsplit(" : ", 1)[1].strip()
    return ""


def op_lines(text: str, kind: str) -> list[OpLine]:
    """Every line of a snapshot that holds an op, with its location and result type."""
    lines = text.split("\n")
    locs = resolve(text, "mlir") if kind in ("mlir", "internal") else [None] * len(lines)
    layout_kinds = {alias: value.rsplit(".", 1)[-1] for alias, value in _LAYOUT_DEF.findall(text)}
    found = []
    for number, (line, loc) in enumerate(zip(lines, locs, strict=False), start=1):
        match = _OP_LINE.match(line)
        if match is None or line.startswith("#"):
            continue
        result_type = _type_of(line[match.end():])
        kinds = tuple(dict.fromkeys(
            layout_kinds.get(alias, alias.lstrip("#").rsplit(".", 1)[-1]) for alias in _ALIAS.findall(result_type)
        ))
        primary = loc.primary if loc is not None else None
        found.append(OpLine(
            line=number, op=match.group(2), results=match.group(1) or "", type=result_type, layouts=kinds,
            loc=(primary.file, primary.line, primary.col) if primary else None,
            name=loc.name if loc is not None else None,
        ))
    return found


def blob_op_lines(digest: str, kind: str, load_text: TextLoader) -> list[OpLine]:
    key = (digest, kind, "ops")
    cached = _OPS.get(key)
    if cached is None:
        cached = op_lines(load_text() or "", kind)
        _OPS.put(key, cached, 200 * len(cached) + 64)
    return cached


@dataclass
class Target:
    """What to follow: a location, maybe narrowed by a NameLoc; or, without a location, nothing."""

    loc: tuple[str, int, int | None] | None
    name: str | None
    exact_col: bool  # a Python line picked without a column matches every column
    picked: OpLine | None = None

    def matches(self, item: OpLine) -> bool:
        if self.loc is None or item.loc is None:
            return False
        file, line, col = item.loc
        if (file, line) != self.loc[:2] or (self.exact_col and col != self.loc[2]):
            return False
        return self.name is None or item.name is None or item.name == self.name


def target_from_line(ops: list[OpLine], line: int) -> Target | None:
    picked = next((item for item in ops if item.line == line), None)
    if picked is None:
        return None
    return Target(picked.loc, picked.name, exact_col=True, picked=picked)


def target_from_value(ops: list[OpLine], value: str) -> Target | None:
    """The op defining an SSA value (`%5`, `%acc`), as printed in that snapshot."""
    for item in ops:
        if value in _VALUE.findall(item.results) or item.results.split(":", 1)[0] == value:
            return Target(item.loc, item.name, exact_col=True, picked=item)
    return None


def _summary(item: OpLine) -> dict:
    return {"line": item.line, "op": item.op, "results": item.results, "type": item.type,
            "layouts": list(item.layouts), "name": item.name,
            "loc": f"{item.loc[0]}:{item.loc[1]}" + (f":{item.loc[2]}" if item.loc[2] else "") if item.loc else None}


def history(target: Target, snapshots: list[dict], ops_of: Callable[[dict], list[OpLine] | None]) -> list[dict]:
    """Per snapshot (rows from page_data.snapshot_dict), the ops matching the target and what changed.
    `ops_of` gives None for a snapshot it cannot follow (LLVM IR has no MLIR locations). A snapshot
    whose ops carry no location at all (the software pipeliner's internal dumps print without debug
    info) cannot be followed either: it is marked so, never read as the op's removal."""
    timeline = []
    previous: list[OpLine] | None = None
    seen = False
    for row in snapshots:
        ops = ops_of(row)
        if ops is None or not any(item.loc for item in ops):
            timeline.append({"index": row["index"], "pass": row["pass"], "url": row["url"],
                             "stage": row.get("stage"), "event": None, "untracked": True, "count": 0,
                             "untracked_reason": "LLVM IR" if ops is None else "no locations",
                             "added": [], "removed": [], "ops": []})
            continue
        matched = [item for item in ops if target.matches(item)]
        signature = [(item.op, item.type) for item in matched]
        before = [(item.op, item.type) for item in previous] if previous is not None else None
        event, added, removed = None, [], []
        if matched and not seen:
            event = "appears"
        elif before is not None and signature != before:
            names_now, names_before = [op for op, _ in signature], [op for op, _ in before]
            added = sorted(set(names_now) - set(names_before))
            removed = sorted(set(names_before) - set(names_now))
            if not matched:
                event = "removed"
            elif added or removed:
                event = "rewritten"
            elif sorted(names_now) != sorted(names_before):
                event = "count"  # the same ops, more or fewer of them (unrolling, CSE)
            else:
                event = "retyped"
        seen = seen or bool(matched)
        timeline.append({
            "index": row["index"], "pass": row["pass"], "url": row["url"], "stage": row.get("stage"),
            "event": event, "added": added, "removed": removed, "count": len(matched),
            "ops": [_summary(item) | {"url": f"{row['url']}#L{item.line}"} for item in matched[:MAX_OPS_SHOWN]],
            "untracked": False,
        })
        previous = matched
    # the pass that made a change: the rows' made_by (app/insight/pass_attribution.py), the one rule
    # every page follows; rows without it fall back to the last snapshot followed (each snapshot is
    # its pass's input, so the change lies somewhere after that one's pass)
    made_by = {row["index"]: row.get("made_by") for row in snapshots}
    followed = None
    for entry in timeline:
        if entry["event"] and followed is not None:
            entry["by"] = made_by.get(entry["index"]) or followed["pass"]
        if not entry["untracked"]:
            followed = entry
    return timeline
