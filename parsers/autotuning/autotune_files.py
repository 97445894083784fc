"""Autotuning results kept in files of their own (the log-line forms are parsers/autotuning/autotune.py's),
read into the same entries: {"kind", "kernel", "shapes", "key", "choices": [{name, time_ms, percent, config,
status, error, compile_time}], "winner", "best_config", "log"}. Percent is as inductor prints it: the
fastest successful choice is 100%, one twice as slow 50%.

- Helion's ``autotune_log`` CSV (helion/autotuner/logger.py, ``AutotuneLogSink``), told by its header:
  ``timestamp_s,config_index,generation,status,perf_ms,compile_time_s,config`` (first form, 0.2.x),
  with ``kernel_id,sample_id`` in front, or ``run_id,timestamp_s,config_id,generation,status,perf_ms,
  compile_time_s,config`` (1.x). The sink appends: one file can hold several sessions, told apart by
  ``run_id``. Status is ``started`` (a config compiled, its result row follows), ``ok``,
  ``deduplicated`` (same generated code as a config already timed: its time), ``error``, ``timeout``,
  ``peer_compilation_fail`` or ``filtered``; a config benchmarked again in a later generation gets
  the latest time, as Helion's search uses it. ``perf_ms`` is empty where there is no finite time.
  ``config`` is ``str(helion.Config)``: ``Config(block_sizes=[64, 64], num_warps=4, ...)`` (values as
  repr). The sidecar ``<base>.meta.jsonl`` (one JSON object a session: ``run_id``, ``kernel_name``,
  ``input_shapes``, ``dtypes``, ...) names each session's kernel and shapes.
- Triton's ``<kernel>.autotune.json`` (``@triton.autotune(cache_results=True)`` or
  ``TRITON_CACHE_AUTOTUNING=1``, Triton 3.4+), in its own cache folder: ``{"key": [...tuning key],
  "configs_timings": [[Config.__dict__, [median, p20, p80] ms], ...]}``; a config that failed has
  ``Infinity``. Triton picks ``min(timings, key=timings.get)``: the lists compared whole, so a tie on
  the median goes to the lower 20th percentile; the winner named here is that one.
"""

from __future__ import annotations

import ast
import csv
import math
import posixpath
from collections.abc import Iterable
from typing import Any

from parsers import json_numbers

HELION_COLUMNS = {"generation", "status", "perf_ms", "compile_time_s", "config"}
_HELION_OK = {"ok", "deduplicated"}  # benchmark_provider's successful statuses
_HELION_FAILED = {"error", "timeout", "peer_compilation_fail"}


def _header(head: bytes) -> list[str] | None:
    line = head.split(b"\n", 1)[0].strip(b"\r\xef\xbb\xbf").decode("utf-8", "replace")
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None


def is_helion_csv(path: str, head: bytes) -> bool:
    """A Helion autotune log by its header row (any file name: it is the user's HELION_AUTOTUNE_LOG)."""
    header = _header(head)
    return header is not None and HELION_COLUMNS <= set(header) and header[-1] == "config"


def is_helion_meta(path: str, head: bytes) -> bool:
    return path.endswith(".jsonl") and head.startswith(b'{"run_id": ') and b'"kernel_name": ' in head


def is_triton_autotune_json(path: str, head: bytes) -> bool:
    return path.endswith(".autotune.json") and head.lstrip().startswith(b"{")


def parse_helion_config(text: str) -> dict[str, Any] | None:
    """``Config(a=1, b=[2, 3])`` as a dict (literal values only); None when it is not that."""
    try:
        call = ast.parse(text.strip(), mode="eval").body
        if not isinstance(call, ast.Call) or getattr(call.func, "id", None) != "Config" or call.args:
            return None
        return {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords if keyword.arg}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def rank(entry: dict[str, Any]) -> dict[str, Any]:
    """Percent of each timed choice against the fastest successful one (100%), and the winner (unless
    the tuner's own pick is already named)."""
    timed = [c for c in entry["choices"] if c.get("time_ms") and c.get("status", "ok") != "failed"]
    if timed:
        best = min(timed, key=lambda c: c["time_ms"])
        entry.setdefault("winner", best["name"])
        for choice in timed:
            choice["percent"] = round(100.0 * best["time_ms"] / choice["time_ms"], 1)
    else:
        entry.setdefault("winner", None)
    return entry


class HelionLogReader:
    """Rows of one Helion autotune CSV (text lines, streamed) -> one entry per session (run_id)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[str] = []
        self._sessions: dict[str, dict[str, Any]] = {}

    def read(self, lines: Iterable[str]) -> list[dict[str, Any]]:
        reader = csv.reader(lines)
        header = next(reader, None) or []
        columns = {name: index for index, name in enumerate(header)}
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                self.problems.append(f"row {reader.line_num}: {len(row)} fields, the header has {len(header)}: "
                                     "cut short or damaged, skipped")
                continue
            self._row(reader.line_num, {name: row[index] for name, index in columns.items()})
        entries = [rank(session) for session in self._sessions.values()]
        for entry in entries:
            del entry["_by_config"]
        return entries

    def _row(self, line: int, row: dict[str, str]) -> None:
        run_id = row.get("run_id") or row.get("kernel_id") or ""
        session = self._sessions.get(run_id)
        if session is None:
            session = self._sessions[run_id] = {
                "kind": "helion", "kernel": None, "shapes": None, "key": None, "run_id": run_id or None,
                "log": self.path, "line": line, "choices": [], "_by_config": {}, "printed_by": "helion"}
        config_text = row["config"]
        config = parse_helion_config(config_text)
        if config is None:
            self.problems.append(f"row {line}: config {config_text[:80]!r} is not a Helion Config(...)")
        identity = row.get("config_id") or config_text
        choice = session["_by_config"].get(identity)
        if choice is None:
            choice = {"name": f"config {len(session['choices']) + 1}", "time_ms": None, "percent": None,
                      "config": config or {}, "config_text": config_text, "status": "started", "error": None,
                      "compile_time": None, "line": line, "measurements": 0}
            if row.get("config_id"):
                choice["config_id"] = row["config_id"]
            session["_by_config"][identity] = choice
            session["choices"].append(choice)
        status = row["status"]
        compile_time = _float(row.get("compile_time_s", ""))
        if compile_time is not None:
            choice["compile_time"] = compile_time
        if status == "started":  # its result row comes later; a rebenchmark keeps the earlier result
            return
        perf = _float(row.get("perf_ms", ""))
        choice["line"] = line
        if status in _HELION_OK and perf is not None:
            choice.update(status="ok", time_ms=perf, error=None)
            choice["measurements"] += 1
            if status == "deduplicated":
                choice["deduplicated"] = True
        elif status in _HELION_FAILED or status in _HELION_OK:  # ok without a time cannot be ranked
            if choice["time_ms"] is None:
                choice.update(status="failed", error=status)
        elif choice["time_ms"] is None:
            choice["status"] = status  # filtered, or a status this reader does not know: shown as it is


def read_helion_meta(lines: Iterable[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """run_id -> {kernel, shapes, dtypes, hardware} from a ``.meta.jsonl`` sidecar; problems."""
    found: dict[str, dict[str, Any]] = {}
    problems = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record, dropped = json_numbers.loads(line)
            if dropped:
                problems.append(f"line {number}: {json_numbers.dropped_note(dropped)}")
            found[str(record["run_id"])] = {
                "kernel": record.get("kernel_name") or None, "shapes": record.get("input_shapes") or None,
                "dtypes": record.get("dtypes") or None, "hardware": record.get("hardware") or None}
        except (ValueError, KeyError, TypeError, RecursionError) as error:
            problems.append(f"line {number}: not a Helion metadata record ({type(error).__name__})")
    return found, problems


def join_helion_meta(entries: list[dict[str, Any]], meta: dict[str, dict[str, Any]]) -> None:
    for entry in entries:
        if entry.get("kind") == "helion" and entry.get("run_id") in meta:
            found = meta[entry["run_id"]]
            entry.update(kernel=found["kernel"], shapes=found["shapes"], dtypes=found["dtypes"],
                         hardware=found["hardware"])


def _triton_config(raw: dict[str, Any]) -> dict[str, Any]:
    """Config.__dict__ as the keys of Config.__str__ (kwargs first), so it matches the log's form."""
    config = dict(raw.get("kwargs") or {})
    for key in ("num_warps", "num_ctas", "num_stages", "maxnreg"):
        if key in raw:
            config[key] = raw[key]
    return config


def read_triton_autotune(path: str, text: str) -> dict[str, Any]:
    """One ``<kernel>.autotune.json``: an entry whose choices carry Triton's measured times. Raises
    ValueError or TypeError when it is not that layout."""
    data, _ = json_numbers.loads(text)  # a NaN or 1e400 time: None, and that config failed, as Triton's inf
    if not isinstance(data, dict) or not isinstance(data.get("configs_timings"), list):
        raise TypeError("no configs_timings list")
    key = data.get("key")
    choices = []
    picked: tuple[list, str] | None = None
    for number, item in enumerate(data["configs_timings"], start=1):
        raw, timings = item
        measured = [math.inf if t is None else float(t) for t in (timings if isinstance(timings, list) else [timings])]
        name = f"config {number}"
        finite = bool(measured) and all(math.isfinite(t) for t in measured)  # a failed config times [inf, inf, inf]
        choices.append({"name": name, "time_ms": measured[0] if finite else None, "percent": None,
                        "config": _triton_config(raw), "status": "ok" if finite else "failed",
                        "error": None if finite else "no time measured (inf): it failed to compile or run",
                        "quantiles_ms": measured if finite else None})
        if finite and (picked is None or measured < picked[0]):  # Triton's min over the lists
            picked = (measured, name)
    entry = {"kind": "triton", "kernel": posixpath.basename(path).removesuffix(".autotune.json"),
             "shapes": None, "key": str(tuple(key)) if isinstance(key, list) else key, "seconds": None,
             "choices": choices, "log": path, "line": None, "printed_by": "triton cache (.autotune.json)",
             "winner": picked[1] if picked else None}
    if picked:
        entry["best_config"] = next(c["config"] for c in choices if c["name"] == picked[1])
    return rank(entry)


def merge_triton_timings(entries: list[dict[str, Any]], cached: dict[str, Any]) -> bool:
    """Fill the times of a session read from the log (TRITON_PRINT_AUTOTUNING) from the cache file of
    the same kernel and key; True when one was found (the cache entry then adds nothing)."""
    for entry in entries:
        if entry.get("kind") != "triton" or entry.get("kernel") != cached["kernel"] or entry.get("key") != cached["key"]:
            continue
        by_config = {tuple(sorted(c["config"].items(), key=str)): c for c in cached["choices"]}
        for choice in entry["choices"]:
            found = by_config.pop(tuple(sorted(choice.get("config", {}).items(), key=str)), None)
            if found is not None:
                choice["time_ms"], choice["quantiles_ms"] = found["time_ms"], found["quantiles_ms"]
                if found["name"] == cached["winner"]:
                    entry["winner"] = choice["name"]
        for left in by_config.values():  # benchmarked without a line in the log (or its lines were lost)
            entry["choices"].append(dict(left, name=f"config {len(entry['choices']) + 1}"))
            if left["name"] == cached["winner"]:
                entry["winner"] = entry["choices"][-1]["name"]
        entry.setdefault("best_config", cached.get("best_config"))
        entry["timings_from"] = cached["log"]
        rank(entry)
        return True
    return False
